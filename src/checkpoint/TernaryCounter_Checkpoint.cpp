// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "TernaryCounter_Checkpoint.hpp"

#include "TernaryCounter_Crc32c.hpp"
#include "checkpoint/impl/TernaryCounter_AtomicFile.hpp"
#include "checkpoint/impl/TernaryCounter_JsonHeader.hpp"

#include <Kokkos_Profiling_ScopedRegion.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <optional>
#include <set>
#include <sstream>

namespace TernaryCounter {

namespace {

using Impl::HeaderMember;
using Impl::HeaderValue;
using Impl::json_string;

constexpr std::uint64_t max_header_bytes = checkpoint_max_header_bytes;
const char* const reserved_keys[] = {"C", "step", "format_version", "header_crc32c"};
// Metadata "crc32c.<tensor>" holds that tensor's checksum; "header_crc32c" the header's, computed
// with its own 8 digits set to '0' (docs/CHECKPOINT_FORMAT.md).
constexpr std::string_view tensor_crc_prefix = "crc32c.";
constexpr std::string_view header_crc_key = "\"header_crc32c\":\"";
constexpr std::string_view crc_placeholder = "00000000";

std::string crc_text(std::uint32_t crc) {
  char text[9];
  std::snprintf(text, sizeof text, "%08x", crc);
  return text;
}

// Exactly 8 lowercase hex digits (so no two texts name one value: a flipped case bit is caught).
bool parse_crc_text(const std::string& text, std::uint32_t& crc) {
  if (text.size() != 8) return false;
  crc = 0;
  for (const char c : text) {
    const int digit = c >= '0' && c <= '9' ? c - '0' : (c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1);
    if (digit < 0) return false;
    crc = crc << 4 | std::uint32_t(digit);
  }
  return true;
}

// The values an update can produce (SPEC: scale clamped to [1e-5, 10]; v a decaying mean of
// squares), which save refuses to write and load refuses to read.
bool valid_scale(float s) {
  return s >= checkpoint_min_scale && s <= checkpoint_max_scale;
}
bool valid_v(float v) {
  return std::isfinite(v) && v >= 0.0f;
}

void put_u64(std::string& out, std::uint64_t x) {
  for (int b = 0; b < 8; ++b) out += char((x >> (8 * b)) & 0xFF);
}

void put_f32(std::string& out, float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  for (int b = 0; b < 4; ++b) out += char((x >> (8 * b)) & 0xFF);
}

float get_f32(const unsigned char* p) {
  return std::bit_cast<float>(std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 |
                              std::uint32_t(p[2]) << 16 | std::uint32_t(p[3]) << 24);
}

std::string tensor_entry(const std::string& key, const char* dtype, std::int64_t rows,
                         std::int64_t cols, std::uint64_t begin, std::uint64_t end) {
  std::ostringstream s;
  s << json_string(key) << ":{\"dtype\":\"" << dtype << "\",\"shape\":[" << rows << "," << cols
    << "],\"data_offsets\":[" << begin << "," << end << "]}";
  return s.str();
}

[[noreturn]] void reject(const std::string& source, const std::string& why) {
  throw CheckpointError("TernaryCounter checkpoint " + source + ": " + why);
}

// A decimal integer in [lo, hi] stored as a metadata string.
std::int64_t metadata_integer(const std::string& source, const std::string& key,
                              const std::string& text, std::int64_t lo, std::int64_t hi) {
  const bool digits =
      !text.empty() && text.size() <= 18 &&
      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  const std::int64_t value = digits ? std::stoll(text) : -1;
  if (!digits || value < lo || value > hi) {
    reject(source, "metadata \"" + key + "\" is \"" + text + "\", expected an integer in [" +
                       std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return value;
}

struct TensorInfo {
  std::string key;
  std::string dtype;
  std::vector<std::uint64_t> shape;
  std::uint64_t begin = 0, end = 0;
};

TensorInfo tensor_info(const std::string& source, const std::string& key, const HeaderValue& v) {
  const auto bad = [&](const std::string& why) {
    reject(source, "tensor \"" + key + "\": " + why);
  };
  if (!v.is_object()) bad("entry is not an object");
  TensorInfo t;
  t.key = key;
  for (const HeaderMember& m : v.children) {
    if (m.key != "dtype" && m.key != "shape" && m.key != "data_offsets") {
      bad("unknown field \"" + m.key + "\"");
    }
  }
  const HeaderValue* dtype = v.find("dtype");
  const HeaderValue* shape = v.find("shape");
  const HeaderValue* offsets = v.find("data_offsets");
  if (!dtype || !dtype->is_string()) bad("missing string \"dtype\"");
  if (!shape || !shape->is_array()) bad("missing array \"shape\"");
  if (!offsets || !offsets->is_array() || offsets->children.size() != 2) {
    bad("\"data_offsets\" must be an array of two integers");
  }
  t.dtype = dtype->string;
  for (const HeaderMember& d : shape->children) {
    if (!d.value.is_integer() || d.value.integer > (std::uint64_t(1) << 40)) {
      bad("shape entries must be integers below 2^40");
    }
    t.shape.push_back(d.value.integer);
  }
  for (const HeaderMember& d : offsets->children) {
    if (!d.value.is_integer()) bad("\"data_offsets\" must be integers");
  }
  t.begin = offsets->children[0].value.integer;
  t.end = offsets->children[1].value.integer;
  if (t.begin > t.end) bad("data_offsets begin > end");
  return t;
}

// The tensor must be `dtype` with shape [rows, cols] (rows < 0: any).
void require_tensor(const std::string& source, const TensorInfo& t, const char* dtype,
                    std::int64_t rows, std::int64_t cols) {
  std::ostringstream want;
  want << dtype << " [" << (rows < 0 ? std::string("out") : std::to_string(rows)) << ", " << cols
       << "]";
  std::ostringstream got;
  got << t.dtype << " [";
  for (std::size_t d = 0; d < t.shape.size(); ++d) got << (d ? ", " : "") << t.shape[d];
  got << "]";
  const bool ok = t.dtype == dtype && t.shape.size() == 2 &&
                  (rows < 0 || t.shape[0] == std::uint64_t(rows)) &&
                  t.shape[1] == std::uint64_t(cols);
  if (!ok) reject(source, "tensor \"" + t.key + "\" is " + got.str() + ", expected " + want.str());
  // Shape entries go up to 2^40, so the product is checked before it can wrap: a wrapped size
  // could match the data offsets and size an allocation smaller than the copy into it.
  const std::uint64_t element = t.dtype == "F32" ? 4 : 1;
  const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max();
  if ((t.shape[0] != 0 && t.shape[1] > limit / t.shape[0]) ||
      (t.shape[0] * t.shape[1] > limit / element)) {
    reject(source, "tensor \"" + t.key + "\" is " + got.str() + ": its size exceeds 2^64 bytes");
  }
  const std::uint64_t bytes = t.shape[0] * t.shape[1] * element;
  if (t.end - t.begin != bytes) {
    reject(source, "tensor \"" + t.key + "\" has data_offsets [" + std::to_string(t.begin) + ", " +
                       std::to_string(t.end) + "] for " + std::to_string(bytes) + " bytes of data");
  }
}

void check_layer(const std::string& name, const PackedState<Kokkos::HostSpace>& state, int C) {
  if (name.empty())
    throw std::invalid_argument("TernaryCounter::save_checkpoint: empty layer name");
  if (state.C != C) {
    throw std::invalid_argument("TernaryCounter::save_checkpoint: layer \"" + name +
                                "\" has C = " + std::to_string(state.C) +
                                " but the checkpoint has C = " + std::to_string(C));
  }
  if (state.codes.extent(1) % bytes_per_group != 0 ||
      state.scale.extent(0) != state.codes.extent(0) ||
      state.v.extent(0) != state.codes.extent(0)) {
    throw std::invalid_argument("TernaryCounter::save_checkpoint: layer \"" + name +
                                "\" is not a well-formed packed state");
  }
  for (std::size_t o = 0; o < state.scale.extent(0); ++o) {
    if (!valid_scale(state.scale(o)) || !valid_v(state.v(o))) {
      throw std::invalid_argument(
          "TernaryCounter::save_checkpoint: layer \"" + name + "\" row " + std::to_string(o) +
          " has scale " + std::to_string(state.scale(o)) + " and v " + std::to_string(state.v(o)) +
          " (the scale must be in [1e-5, 10], v finite and >= 0)");
    }
  }
}

}  // namespace

const CheckpointLayer& Checkpoint::layer(const std::string& name) const {
  for (const CheckpointLayer& l : layers) {
    if (l.name == name) return l;
  }
  throw CheckpointError("TernaryCounter checkpoint: it has no layer \"" + name + "\"");
}

std::string serialize_checkpoint(const Checkpoint& checkpoint) {
  if (checkpoint.C < min_counter_depth || checkpoint.C > max_counter_depth) {
    throw std::invalid_argument("TernaryCounter::save_checkpoint: C = " +
                                std::to_string(checkpoint.C) + " must be in [2, 11]");
  }
  if (checkpoint.step < 0) {
    throw std::invalid_argument("TernaryCounter::save_checkpoint: step must be >= 0");
  }
  std::set<std::string> keys;
  for (const CheckpointLayer& l : checkpoint.layers) {
    check_layer(l.name, l.state, checkpoint.C);
    for (const char* suffix : {".state", ".scale", ".v"}) {
      if (!keys.insert(l.name + suffix).second || l.name + suffix == "__metadata__") {
        throw std::invalid_argument("TernaryCounter::save_checkpoint: duplicate layer name \"" +
                                    l.name + "\"");
      }
    }
  }
  std::map<std::string, std::string> metadata = checkpoint.metadata;
  // Not a structured binding: clang before 16 cannot capture one in a lambda.
  for (const auto& entry : metadata) {
    const std::string& key = entry.first;
    const bool reserved = key.starts_with(tensor_crc_prefix) ||
                          std::any_of(std::begin(reserved_keys), std::end(reserved_keys),
                                      [&](const char* r) { return key == r; });
    if (reserved) {
      throw std::invalid_argument("TernaryCounter::save_checkpoint: metadata key \"" + key +
                                  "\" is reserved");
    }
  }
  metadata["C"] = std::to_string(checkpoint.C);
  metadata["step"] = std::to_string(checkpoint.step);
  metadata["format_version"] = std::to_string(checkpoint_format_version);
  // Never write what parse_checkpoint refuses: the root and __metadata__ objects, one value per
  // metadata entry (a checksum per tensor and the header's included), and per tensor 8 (its
  // entry, 3 fields, 2 + 2 array items).
  const std::size_t values = 2 + metadata.size() + 1 + 3 * 9 * checkpoint.layers.size();
  if (values > checkpoint_max_header_values) {
    throw std::invalid_argument(
        "TernaryCounter::save_checkpoint: " + std::to_string(checkpoint.layers.size()) +
        " layers and " + std::to_string(metadata.size()) + " metadata entries need " +
        std::to_string(values) + " JSON values, more than the " +
        std::to_string(checkpoint_max_header_values) + " a checkpoint header may hold");
  }

  // F32 tensors first (4-byte aligned after the 8-aligned header), then the U8 codes.
  std::string data, tensors;
  const auto add_tensor = [&](const std::string& key, const char* dtype, std::int64_t cols,
                              std::int64_t rows, std::uint64_t begin) {
    tensors += "," + tensor_entry(key, dtype, rows, cols, begin, data.size());
    metadata[std::string(tensor_crc_prefix) + key] =
        crc_text(crc32c(data.data() + begin, data.size() - begin));
  };
  for (const CheckpointLayer& l : checkpoint.layers) {
    for (const auto& [suffix, view] :
         {std::pair{".scale", l.state.scale}, std::pair{".v", l.state.v}}) {
      const std::uint64_t begin = data.size();
      for (std::size_t o = 0; o < view.extent(0); ++o) put_f32(data, view(o));
      add_tensor(l.name + suffix, "F32", 1, l.state.out(), begin);
    }
  }
  for (const CheckpointLayer& l : checkpoint.layers) {
    const std::uint64_t begin = data.size();
    const std::size_t row = l.state.codes.extent(1);
    for (std::size_t o = 0; o < l.state.codes.extent(0); ++o) {
      data.append(reinterpret_cast<const char*>(&l.state.codes(o, 0)), row);
    }
    add_tensor(l.name + ".state", "U8", std::int64_t(row), l.state.out(), begin);
  }
  metadata["header_crc32c"] = std::string(crc_placeholder);

  std::string header = "{\"__metadata__\":{";
  bool first = true;
  for (const auto& [k, v] : metadata) {
    header += (first ? "" : ",") + json_string(k) + ":" + json_string(v);
    first = false;
  }
  header += "}" + tensors + "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  if (header.size() > max_header_bytes) {
    throw std::invalid_argument("TernaryCounter::save_checkpoint: the header would be " +
                                std::to_string(header.size()) + " bytes, more than the " +
                                std::to_string(max_header_bytes) + " a reader accepts");
  }
  std::string file;
  file.reserve(8 + header.size() + data.size());
  put_u64(file, header.size());
  file += header;
  // The header's checksum covers the length and the whole header, its own digits read as '0'.
  const std::size_t digits = file.find(header_crc_key) + header_crc_key.size();
  file.replace(digits, crc_placeholder.size(), crc_text(crc32c(file)));
  return file + data;
}

namespace {

Checkpoint parse_image(std::string_view bytes, const std::string& source) {
  if (bytes.size() < 8) {
    reject(source, "file is " + std::to_string(bytes.size()) +
                       " bytes, shorter than the 8-byte header length");
  }
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  std::uint64_t header_bytes = 0;
  for (int b = 0; b < 8; ++b) header_bytes |= std::uint64_t(u[b]) << (8 * b);
  if (header_bytes > max_header_bytes) {
    reject(source, "header length " + std::to_string(header_bytes) + " exceeds the limit of " +
                       std::to_string(max_header_bytes) + " bytes");
  }
  if (header_bytes > bytes.size() - 8) {
    reject(source, "header length " + std::to_string(header_bytes) + " does not fit in the " +
                       std::to_string(bytes.size()) + "-byte file (truncated?)");
  }
  HeaderValue root;
  std::string error;
  if (!Impl::read_json_header(bytes.substr(8, header_bytes), checkpoint_max_header_values,
                              checkpoint_max_header_depth, root, error)) {
    reject(source, "header does not parse: " + error);
  }
  if (!root.is_object()) reject(source, "header is not a JSON object");

  // Metadata: a string -> string map with the reserved keys.
  const HeaderValue* meta = root.find("__metadata__");
  if (!meta || !meta->is_object()) {
    reject(source, "header has no \"__metadata__\" object");
  }
  Checkpoint checkpoint;
  std::map<std::string, std::string> entries;
  for (const auto& [k, v] : meta->children) {
    if (!v.is_string()) reject(source, "metadata \"" + k + "\" is not a string");
    entries[k] = v.string;
  }
  for (const char* key : {"C", "step", "format_version"}) {
    if (!entries.count(key)) reject(source, std::string("metadata has no \"") + key + "\"");
  }
  const bool checksummed = entries["format_version"] == std::to_string(checkpoint_format_version);
  if (!checksummed &&
      entries["format_version"] != std::to_string(checkpoint_unchecked_format_version)) {
    reject(source, "format_version \"" + entries["format_version"] + "\" is not supported (" +
                       std::to_string(checkpoint_unchecked_format_version) + " and " +
                       std::to_string(checkpoint_format_version) + " are)");
  }
  // Checksums: the header's first, so a damaged header is refused as damaged.
  std::map<std::string, std::uint32_t> tensor_crcs;
  if (checksummed) {
    std::uint32_t stored = 0;
    if (!entries.count("header_crc32c") || !parse_crc_text(entries["header_crc32c"], stored)) {
      reject(source, "metadata \"header_crc32c\" is missing or not 8 lowercase hex digits");
    }
    const std::string_view raw = bytes.substr(0, 8 + header_bytes);
    const std::size_t at = raw.find(header_crc_key);
    if (at == std::string_view::npos ||
        raw.find(header_crc_key, at + 1) != std::string_view::npos) {
      reject(source, "the header must hold \"header_crc32c\":\"...\" exactly once, unescaped");
    }
    const std::size_t digits = at + header_crc_key.size();
    std::string blanked(raw);
    blanked.replace(digits, crc_placeholder.size(), crc_placeholder);
    if (crc32c(blanked) != stored) {
      reject(source, "header checksum mismatch (CRC-32C " + crc_text(crc32c(blanked)) +
                         ", stored " + crc_text(stored) + "): the header is damaged");
    }
    for (auto it = entries.begin(); it != entries.end();) {
      if (!it->first.starts_with(tensor_crc_prefix)) {
        ++it;
        continue;
      }
      std::uint32_t crc = 0;
      if (!parse_crc_text(it->second, crc)) {
        reject(source, "metadata \"" + it->first + "\" is not 8 lowercase hex digits");
      }
      tensor_crcs[it->first.substr(tensor_crc_prefix.size())] = crc;
      it = entries.erase(it);
    }
  } else {
    // A format 2 file edited to claim format 1 would skip its checksums: refused.
    for (const auto& [key, value] : entries) {
      if (key == "header_crc32c" || key.starts_with(tensor_crc_prefix)) {
        reject(source, "format_version 1 with a checksum entry \"" + key + "\"");
      }
    }
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      std::fprintf(stderr,
                   "TernaryCounter checkpoint %s: format_version 1 has no checksums: its data "
                   "is not verified (save it again to add them)\n",
                   source.c_str());
    }
  }
  checkpoint.C =
      int(metadata_integer(source, "C", entries["C"], min_counter_depth, max_counter_depth));
  checkpoint.step = metadata_integer(source, "step", entries["step"], 0, INT64_MAX / 2);
  for (const char* key : reserved_keys) entries.erase(key);
  checkpoint.metadata = std::move(entries);

  // Tensors: every key but __metadata__ is <layer>.<state|scale|v>.
  std::map<std::string, std::map<std::string, TensorInfo>> layers;
  std::vector<TensorInfo> all;
  for (const auto& [key, value] : root.children) {
    if (key == "__metadata__") continue;
    const std::size_t dot = key.rfind('.');
    const std::string name = dot == std::string::npos ? "" : key.substr(0, dot);
    const std::string part = dot == std::string::npos ? "" : key.substr(dot + 1);
    if (name.empty() || (part != "state" && part != "scale" && part != "v")) {
      reject(source, "unexpected tensor \"" + key + "\" (expected <layer>.state|scale|v)");
    }
    TensorInfo t = tensor_info(source, key, value);
    layers[name][part] = t;
    all.push_back(std::move(t));
  }
  // The data buffer is exactly covered by the tensors, without gaps or overlaps.
  const std::uint64_t buffer = bytes.size() - 8 - header_bytes;
  std::sort(all.begin(), all.end(),
            [](const TensorInfo& a, const TensorInfo& b) { return a.begin < b.begin; });
  std::uint64_t covered = 0;
  for (const TensorInfo& t : all) {
    if (t.begin != covered) {
      reject(source, "tensor \"" + t.key + "\" starts at data offset " + std::to_string(t.begin) +
                         " but the previous tensor ends at " + std::to_string(covered));
    }
    covered = t.end;
  }
  if (covered != buffer) {
    reject(source, "tensors cover " + std::to_string(covered) + " data bytes but the file has " +
                       std::to_string(buffer) + " (truncated or trailing bytes)");
  }

  const unsigned char* data = u + 8 + header_bytes;
  if (checksummed) {
    for (const TensorInfo& t : all) {
      const auto crc = tensor_crcs.find(t.key);
      if (crc == tensor_crcs.end()) reject(source, "tensor \"" + t.key + "\" has no checksum");
      const std::uint32_t actual = crc32c(data + t.begin, std::size_t(t.end - t.begin));
      if (actual != crc->second) {
        reject(source, "tensor \"" + t.key + "\" checksum mismatch (CRC-32C " + crc_text(actual) +
                           ", stored " + crc_text(crc->second) + "): its data is damaged");
      }
      tensor_crcs.erase(crc);
    }
    if (!tensor_crcs.empty()) {
      reject(source, "a checksum names \"" + tensor_crcs.begin()->first + "\", not a tensor");
    }
  }
  const int lv = counter_levels(checkpoint.C);
  for (const auto& [name, parts] : layers) {
    for (const char* part : {"state", "scale", "v"}) {
      if (!parts.count(part))
        reject(source, "layer \"" + name + "\" has no tensor \"" + part + "\"");
    }
    const TensorInfo& st = parts.at("state");
    if (st.shape.size() != 2 || st.shape[1] % bytes_per_group != 0) {
      reject(source, "tensor \"" + st.key + "\" must be U8 [out, 3*in/4]");
    }
    require_tensor(source, st, "U8", -1, std::int64_t(st.shape[1]));
    const std::int64_t out = st.shape[0];
    const std::int64_t in = std::int64_t(st.shape[1]) / bytes_per_group * codes_per_group;
    require_tensor(source, parts.at("scale"), "F32", out, 1);
    require_tensor(source, parts.at("v"), "F32", out, 1);

    PackedState<Kokkos::HostSpace> state;
    try {
      state = PackedState<Kokkos::HostSpace>(name, out, in, checkpoint.C);
    } catch (const std::runtime_error& e) {  // Kokkos reports a failed allocation this way
      reject(source, "layer \"" + name + "\" (" + std::to_string(out) + " x " + std::to_string(in) +
                         ") cannot be allocated: " + e.what());
    }
    const unsigned char* codes = data + st.begin;
    for (std::int64_t o = 0; o < out; ++o) {
      for (std::int64_t b = 0; b < std::int64_t(st.shape[1]); b += bytes_per_group) {
        const std::uint32_t word = load_group(codes + o * st.shape[1] + b);
        for (int lane = 0; lane < codes_per_group; ++lane) {
          if (group_code(word, lane) >= 3 * lv) {
            reject(source, "layer \"" + name + "\" has code " +
                               std::to_string(group_code(word, lane)) + " at row " +
                               std::to_string(o) +
                               ", not valid for C = " + std::to_string(checkpoint.C));
          }
        }
        for (int k = 0; k < bytes_per_group; ++k)
          state.codes(o, b + k) = codes[o * st.shape[1] + b + k];
      }
      state.scale(o) = get_f32(data + parts.at("scale").begin + 4 * o);
      state.v(o) = get_f32(data + parts.at("v").begin + 4 * o);
      if (!valid_scale(state.scale(o)) || !valid_v(state.v(o))) {
        reject(source, "layer \"" + name + "\" row " + std::to_string(o) + " has scale " +
                           std::to_string(state.scale(o)) + " and v " + std::to_string(state.v(o)) +
                           ": an update keeps the scale in [1e-5, 10] and v finite and >= 0");
      }
    }
    checkpoint.layers.push_back({name, state});
  }
  return checkpoint;
}

}  // namespace

Checkpoint parse_checkpoint(std::string_view bytes, const std::string& source) {
  // The header's size and value count are bounded before parsing, and the tensors' sizes by the
  // file's; what may still fail is an allocation on a machine short of memory.
  try {
    Kokkos::Profiling::ScopedRegion region("TernaryCounter::parse_checkpoint");
    return parse_image(bytes, source);
  } catch (const std::bad_alloc&) {
    reject(source, "out of memory while reading its " + std::to_string(bytes.size()) + " bytes");
  }
}

void save_checkpoint(const std::string& path, const Checkpoint& checkpoint) {
  Kokkos::Profiling::ScopedRegion region("TernaryCounter::save_checkpoint");
  if (path.empty()) throw CheckpointError("TernaryCounter::save_checkpoint: the path is empty");
  if (!Impl::replaceable(path)) {
    throw CheckpointError("TernaryCounter::save_checkpoint: " + path +
                          " exists and is not a regular file (a symbolic link, device, FIFO or "
                          "folder is never replaced)");
  }
  const std::string bytes = serialize_checkpoint(checkpoint);
  try {
    Impl::replace_file(path, bytes);
  } catch (const Impl::FileError& e) {
    throw CheckpointError(std::string("TernaryCounter::save_checkpoint: ") + e.what());
  }
}

namespace {

// The end of the data buffer the header's tensors describe (their largest data offset), or
// none when the header does not parse (parse_checkpoint then says why).
std::optional<std::uint64_t> declared_data_bytes(std::string_view header) {
  HeaderValue root;
  std::string error;
  if (!Impl::read_json_header(header, checkpoint_max_header_values, checkpoint_max_header_depth,
                              root, error) ||
      !root.is_object()) {
    return std::nullopt;
  }
  std::uint64_t end = 0;
  for (const HeaderMember& m : root.children) {
    const HeaderValue* offsets = m.value.is_object() ? m.value.find("data_offsets") : nullptr;
    if (offsets && offsets->is_array() && offsets->children.size() == 2 &&
        offsets->children[1].value.is_integer()) {
      end = std::max(end, offsets->children[1].value.integer);
    }
  }
  return end;
}

}  // namespace

std::string read_checkpoint_bytes(const std::string& path) {
  const auto fail = [&](const std::string& why) -> void {
    throw CheckpointError("TernaryCounter checkpoint " + path + ": " + why);
  };
  std::optional<Impl::ReadableFile> file;
  try {
    file.emplace(path);
  } catch (const Impl::FileError& e) {
    fail(e.what());
  }
  const std::uint64_t size = file->size();
  std::string bytes;
  try {
    if (size < 8) {  // too short: parse_checkpoint says so
      if (!file->read_exactly(bytes, size)) fail("read error");
      return bytes;
    }
    if (!file->read_exactly(bytes, 8)) fail("read error");
    std::uint64_t header_bytes = 0;
    for (int b = 0; b < 8; ++b) header_bytes |= std::uint64_t(std::uint8_t(bytes[b])) << (8 * b);
    // Too long for the limit or the file: parse_checkpoint says which.
    if (header_bytes > max_header_bytes || header_bytes > size - 8) return bytes;
    if (!file->read_exactly(bytes, header_bytes)) fail("read error");
    const std::optional<std::uint64_t> declared =
        declared_data_bytes(std::string_view(bytes).substr(8));
    if (!declared) return bytes;  // parse_checkpoint says what is wrong with the header
    const std::uint64_t data = *declared;
    if (size - 8 - header_bytes != data) {
      fail("the file is " + std::to_string(size) + " bytes but its header describes " +
           std::to_string(8 + header_bytes + data) + " (truncated, trailing bytes or damaged)");
    }
    if (!file->read_exactly(bytes, data)) fail("read error (did the file shrink?)");
  } catch (const std::bad_alloc&) {
    fail("out of memory reading the file");
  }
  return bytes;
}

Checkpoint read_checkpoint(const std::string& path) {
  return parse_checkpoint(read_checkpoint_bytes(path), path);
}

}  // namespace TernaryCounter
