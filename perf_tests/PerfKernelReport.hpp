// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The per-kernel breakdown of a timed body (ternary-counter-perf --kernels): the Kokkos Tools
// callbacks that need no tool library (Kokkos::Tools::Experimental::set_*_callback) record every
// kernel, deep copy and profiling region the body enters. Each callback fences and takes a
// timestamp, so a kernel's time is its own; the time a region (a library call such as
// TernaryCounter::forward) spends outside any kernel or copy is the vendor's work (cuBLAS GEMMs
// are not Kokkos kernels), allocations, checks and the fences' own cost. Every interval's
// exclusive time goes to one row, so the rows add up to the body's time.
#pragma once

#include "PerfTiming.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace TernaryCounter::Perf {

/// What a row of the report timed.
enum class KernelRowKind {
  kernel,  ///< a Kokkos parallel_for / reduce / scan, by its label
  copy,    ///< a Kokkos::deep_copy, by its destination's label
  vendor,  ///< a region that holds a vendor call only (vendor_call_regions), by its name
  other,   ///< a region's time outside its kernels, copies and vendor regions
  outside  ///< the body's time outside every region: the caller's own work
};

inline const char* kernel_row_kind_name(KernelRowKind kind) {
  switch (kind) {
    case KernelRowKind::kernel:
      return "kernel";
    case KernelRowKind::copy:
      return "copy";
    case KernelRowKind::vendor:
      return "vendor";
    case KernelRowKind::other:
      return "other";
    case KernelRowKind::outside:
      return "outside";
  }
  return "?";
}

/// The regions that hold one vendor call each and nothing else: their time is the vendor's
/// kernel, their count its launches (the library's cuBLAS int8 GEMM, TernaryCounter_CublasInt8).
inline bool is_vendor_call_region(const std::string& name) {
  return name == "TernaryCounter::vendor_int8_gemm";
}

/// One row: a kernel label (or region) and the region it ran in, its launches and time per
/// repeat of the body.
struct KernelRow {
  KernelRowKind kind = KernelRowKind::kernel;
  std::string name;                    ///< kernel label, copy destination, or region name
  std::string region;                  ///< the innermost region around it ("" outside every region)
  std::vector<std::int64_t> launches;  ///< per repeat
  Samples ms;                          ///< exclusive time per repeat (0 where it did not run)
  /// Copies: the bytes Kokkos reports (a fill writes them, a copy reads and writes them), summed
  /// over the row's copies of the last repeat; 0 for other rows.
  double copy_bytes = 0;
  /// Copies of the last repeat that Kokkos ran as kernels of its own (those kernels have rows
  /// of their own): not launches of their own.
  std::int64_t copies_as_kernels = 0;

  std::int64_t median_launches() const {
    std::vector<std::int64_t> s = launches;
    std::sort(s.begin(), s.end());
    return s.empty() ? 0 : s[s.size() / 2];
  }
};

/// The rows of every repeat of a body, and the body's own time per repeat.
struct KernelBreakdown {
  std::vector<KernelRow> rows;  ///< in order of first appearance
  Samples body_ms;              ///< the body's wall time per repeat, callbacks and fences included
  /// Fences the body's code asked for (not the ones of this report or Kokkos' tool fences), by
  /// name, counted in the last repeat.
  std::map<std::string, std::int64_t> fences;

  /// Launches per repeat of one kind of row (copies: those not run as a Kokkos kernel).
  std::int64_t launches(KernelRowKind kind) const {
    std::int64_t n = 0;
    for (const KernelRow& row : rows) {
      if (row.kind == kind) n += row.median_launches() - row.copies_as_kernels;
    }
    return n;
  }
};

namespace Detail {

struct Frame {
  KernelRowKind kind;
  std::string name;
  double start;             ///< seconds
  double child = 0;         ///< time of the frames nested in it
  double bytes = 0;         ///< a copy's bytes read + written
  bool has_kernel = false;  ///< a kernel ran inside it (a copy Kokkos runs as a kernel)
};

/// A row's total in one repeat.
struct Tally {
  double seconds = 0;
  std::int64_t count = 0;
  double bytes = 0;
  std::int64_t with_kernels = 0;  ///< copies with a kernel inside
};

/// The state the callbacks (plain function pointers) share; one body at a time, host thread
/// only.
struct Recorder {
  bool active = false;
  bool fencing = false;  ///< inside the report's own fence
  std::chrono::steady_clock::time_point origin;
  std::vector<Frame> stack;
  /// Per (kind, name, region) of this repeat: exclusive seconds and count.
  std::map<std::tuple<int, std::string, std::string>, Tally> repeat;
  std::vector<std::tuple<int, std::string, std::string>> order;  ///< first appearance
  std::map<std::string, std::int64_t> fences;
  std::int64_t next_id = 1;

  double now() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - origin).count();
  }
  /// Fences every execution space, then the time: the work before this point is done.
  double fenced_now() {
    fencing = true;
    Kokkos::fence("TernaryCounter::Perf::kernel_report");
    fencing = false;
    return now();
  }
  std::string innermost_region() const {
    for (auto frame = stack.rbegin(); frame != stack.rend(); ++frame) {
      if (frame->kind == KernelRowKind::other) return frame->name;
    }
    return "";
  }
  void add(KernelRowKind kind, const std::string& name, const std::string& region, double seconds,
           std::int64_t count, double bytes = 0, bool with_kernel = false) {
    const auto key = std::make_tuple(int(kind), name, region);
    auto [it, inserted] = repeat.try_emplace(key);
    if (inserted) {
      bool known = false;
      for (const auto& k : order) known = known || k == key;
      if (!known) order.push_back(key);
    }
    it->second.seconds += seconds;
    it->second.count += count;
    it->second.bytes += bytes;
    it->second.with_kernels += with_kernel ? 1 : 0;
  }
  void begin(KernelRowKind kind, const std::string& name, double bytes = 0) {
    if (!active) return;
    stack.push_back({kind, name, fenced_now(), 0.0, bytes});
  }
  void end(KernelRowKind expected) {
    if (!active) return;
    const double t = fenced_now();
    if (stack.empty() ||
        (stack.back().kind == KernelRowKind::other) != (expected == KernelRowKind::other)) {
      throw std::logic_error("TernaryCounter::Perf::kernel report: unbalanced Kokkos Tools events");
    }
    const Frame frame = stack.back();
    stack.pop_back();
    const double total = t - frame.start;
    KernelRowKind kind = frame.kind;
    std::string name = frame.name, region = innermost_region();
    if (kind == KernelRowKind::other) {
      // A region's own time: a vendor call where the region holds one, else "other".
      if (is_vendor_call_region(frame.name)) {
        kind = KernelRowKind::vendor;
      } else {
        region = frame.name;
        name = "vendor / other";
      }
    }
    add(kind, name, region, total - frame.child, 1, frame.bytes,
        kind == KernelRowKind::copy && frame.has_kernel);
    if (!stack.empty()) {
      stack.back().child += total;
      if (kind == KernelRowKind::kernel) stack.back().has_kernel = true;
    }
  }
};

inline Recorder& recorder() {
  static Recorder r;
  return r;
}

inline void begin_kernel(const char* name, std::uint32_t, std::uint64_t* id) {
  Recorder& r = recorder();
  *id = std::uint64_t(r.next_id++);
  r.begin(KernelRowKind::kernel, name);
}
inline void end_kernel(std::uint64_t) {
  recorder().end(KernelRowKind::kernel);
}
inline void push_region(const char* name) {
  recorder().begin(KernelRowKind::other, name);
}
inline void pop_region() {
  recorder().end(KernelRowKind::other);
}
inline void begin_copy(Kokkos::Profiling::SpaceHandle, const char* dst, const void*,
                       Kokkos::Profiling::SpaceHandle, const char* src, const void*,
                       std::uint64_t size) {
  const std::string to = *dst ? dst : "(an unlabelled view)", from = src;
  // Kokkos names a value's side "Scalar" or "(none)": a fill of a view from a value writes the
  // bytes, a copy (also of a view's value to the host) reads and writes them.
  const bool fill = from == "Scalar" || from == "(none)";
  recorder().begin(KernelRowKind::copy,
                   fill ? "deep_copy fill of " + to : "deep_copy " + from + " -> " + to,
                   fill ? double(size) : 2.0 * double(size));
}
inline void end_copy() {
  recorder().end(KernelRowKind::copy);
}
inline void begin_fence(const char* name, std::uint32_t, std::uint64_t* id) {
  Recorder& r = recorder();
  *id = 0;
  if (!r.active || r.fencing) return;
  const std::string n = name;
  if (n.rfind("Kokkos::Tools::", 0) == 0) return;  // the fences Kokkos adds around callbacks
  ++r.fences[n];
}
inline void end_fence(std::uint64_t) {}

}  // namespace Detail

/// Whether the report can install its callbacks: not while a Kokkos tool library is loaded
/// (--kokkos-tools-libs), whose callbacks it would replace.
inline bool kernel_report_available() {
  return !Kokkos::Tools::profileLibraryLoaded();
}

/// Runs prepare(); body() once unrecorded, then `repeats` times prepare() and a recorded body().
/// The callbacks are installed for this call only; the previous ones are restored on return.
template <class Prepare, class Body>
KernelBreakdown record_kernels(int repeats, Prepare&& prepare, Body&& body) {
  namespace Tools = Kokkos::Tools::Experimental;
  if (!kernel_report_available()) {
    throw std::runtime_error("--kernels needs the Kokkos Tools callbacks, but a tool is loaded");
  }
  prepare();
  body();
  Kokkos::fence("TernaryCounter::Perf::after_warm_up");

  const Tools::EventSet saved = Tools::get_callbacks();
  struct Restore {
    Tools::EventSet events;
    ~Restore() {
      Detail::recorder().active = false;
      Tools::set_callbacks(events);
    }
  } restore{saved};
  Tools::set_begin_parallel_for_callback(Detail::begin_kernel);
  Tools::set_end_parallel_for_callback(Detail::end_kernel);
  Tools::set_begin_parallel_reduce_callback(Detail::begin_kernel);
  Tools::set_end_parallel_reduce_callback(Detail::end_kernel);
  Tools::set_begin_parallel_scan_callback(Detail::begin_kernel);
  Tools::set_end_parallel_scan_callback(Detail::end_kernel);
  Tools::set_push_region_callback(Detail::push_region);
  Tools::set_pop_region_callback(Detail::pop_region);
  Tools::set_begin_deep_copy_callback(Detail::begin_copy);
  Tools::set_end_deep_copy_callback(Detail::end_copy);
  Tools::set_begin_fence_callback(Detail::begin_fence);
  Tools::set_end_fence_callback(Detail::end_fence);

  Detail::Recorder& r = Detail::recorder();
  r = Detail::Recorder{};
  r.origin = std::chrono::steady_clock::now();
  KernelBreakdown out;
  std::map<std::tuple<int, std::string, std::string>, std::size_t> row_of;
  for (int k = 0; k < repeats; ++k) {
    prepare();
    Kokkos::fence("TernaryCounter::Perf::before_recorded");
    r.repeat.clear();
    r.fences.clear();
    r.stack.clear();
    const double t0 = r.now();
    r.active = true;
    body();
    const double t1 = r.fenced_now();
    r.active = false;
    if (!r.stack.empty()) {
      throw std::logic_error("TernaryCounter::Perf::kernel report: a region or kernel is open");
    }
    double inside = 0;
    for (const auto& [key, value] : r.repeat) inside += value.seconds;
    r.add(KernelRowKind::outside, "caller, outside every region", "", (t1 - t0) - inside, 0);
    out.body_ms.ms.push_back((t1 - t0) * 1e3);
    for (const auto& key : r.order) {
      auto [it, inserted] = row_of.try_emplace(key, out.rows.size());
      if (inserted) {
        KernelRow row;
        row.kind = KernelRowKind(std::get<0>(key));
        row.name = std::get<1>(key);
        row.region = std::get<2>(key);
        row.launches.assign(k, 0);
        row.ms.ms.assign(k, 0.0);
        out.rows.push_back(row);
      }
      KernelRow& row = out.rows[it->second];
      const auto found = r.repeat.find(key);
      const Detail::Tally tally = found == r.repeat.end() ? Detail::Tally{} : found->second;
      row.launches.push_back(tally.count);
      row.ms.ms.push_back(tally.seconds * 1e3);
      row.copy_bytes = tally.bytes;
      row.copies_as_kernels = tally.with_kernels;
    }
    out.fences = r.fences;
  }
  return out;
}

}  // namespace TernaryCounter::Perf
