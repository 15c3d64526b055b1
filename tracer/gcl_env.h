/* The tool's settings from the environment, read once in nvbit_at_init.
 *
 * Why a header of its own: a setting read wrong is found only after a long GPU run (a negative
 * GCL_KERNEL_BEGIN, cast to uint64, traced no launch; GCL_BUFFER_MB of 2^44 or more wrapped the
 * byte count to a tiny buffer; an out-of-range number was clamped by strtoll without a word),
 * so every value is checked here, host-only, where tracer/test/env_test.cpp can run it. Each bad
 * value is one line naming the variable, and exit status 2, before anything is instrumented. */
#pragma once

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <string>

namespace gcl {

/* "" when text is a whole base-10 integer in [lo, hi] (stored in *out), else what is wrong:
 * "is not an integer" or "must be <meaning>" (meaning: what the variable takes, for the user). */
inline std::string parse_env_int(const char *text, int64_t lo, int64_t hi, const char *meaning, int64_t *out) {
  errno = 0;
  char *end = nullptr;
  const long long x = strtoll(text, &end, 10);
  if (end == text || *end) return "is not an integer";
  if (errno == ERANGE || x < lo || x > hi) return std::string("must be ") + meaning;
  *out = (int64_t)x;
  return "";
}

/* The variable's value, dflt when unset or empty; exits 2 with one line when it is bad. */
inline int64_t env_int(const char *name, int64_t dflt, int64_t lo = INT64_MIN, int64_t hi = INT64_MAX,
                       const char *meaning = "an integer in range") {
  const char *v = getenv(name);
  if (!v || !*v) return dflt;
  int64_t x = 0;
  const std::string err = parse_env_int(v, lo, hi, meaning, &x);
  if (!err.empty()) {
    fprintf(stderr, "gcl_tracer: %s=%s %s\n", name, v, err.c_str());
    exit(2);
  }
  return x;
}

/* A size or a timeout, 0 = off: negative or above hi is refused the same way. */
inline uint64_t env_count(const char *name, const char *meaning, int64_t hi = INT64_MAX) {
  return (uint64_t)env_int(name, 0, 0, hi, meaning);
}

/* A switch: 0 or 1 (GCL_VERBOSE=yes was "not an integer" already; 2 is refused too, so that no
 * level is implied that the tool does not have). */
inline int env_flag(const char *name, int dflt) { return (int)env_int(name, dflt, 0, 1, "0 or 1"); }

/* "" when GCL_KERNEL_BEGIN .. GCL_KERNEL_END (end 0: no end) holds a launch, else the line that
 * says why not. Why: each was in range alone, and END below BEGIN ran the whole program under
 * the tool and traced no launch, without a word. */
inline std::string kernel_range_error(int64_t begin, int64_t end) {
  if (end == 0 || end >= begin) return "";
  return "GCL_KERNEL_END=" + std::to_string(end) + " is before GCL_KERNEL_BEGIN=" + std::to_string(begin) +
         ": no launch would be traced";
}

/* GCL_BUFFER_MB's largest value: its byte count (MiB << 20) must fit in 64 bits, and 16 TiB is
 * far beyond any GPU's memory, so a larger number is a typo, not a wish. */
constexpr int64_t kMaxBufferMb = int64_t(1) << 24;

}  // namespace gcl
