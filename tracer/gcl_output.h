/*
 * gcl_output.h -- checks on the compressor the tool pipes each trace into.
 *
 * Kept apart from the tool so that they run on the CPU (test/output_test.cpp).
 * Why they exist: with GCL_COMPRESS=zstd (the default) on a host without zstd, the shell
 * behind popen exits 127 at the first traced launch. A C program then died of SIGPIPE on its
 * first write; a program that ignores SIGPIPE (Python, PyTorch) ran on, and kernelslist named
 * trace files that were never created.
 */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace gcl {

/* The program GCL_COMPRESS=`compress` runs, or "" for none. */
inline std::string compressor_program(const std::string &compress) {
  return compress == "zstd" ? "zstd" : compress == "xz" ? "xz" : compress == "gz" ? "gzip" : "";
}

/* `text` as one word of `sh -c`: in single quotes, each ' in it written '\''.
 * Why: the trace's path went into the compressor's command line between bare single quotes,
 * so a GCL_TRACE_DIR with an apostrophe (/home/o'brien/traces) was a shell syntax error: the
 * shell exited 2 before reading the pipe, and a C program died of SIGPIPE at its first
 * traced launch with no word from the tool. */
inline std::string shell_quote(const std::string &text) {
  std::string q = "'";
  for (char c : text) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

/* The command GCL_COMPRESS=`compress` (zstd, xz or gz) runs to write `path` from its standard
 * input. `env -u LD_PRELOAD`: the compressor would otherwise inherit the preload and start
 * NVBit and this tool inside a process that never touches the GPU. */
inline std::string compressor_command(const std::string &compress, const std::string &path) {
  return compress == "zstd" ? "env -u LD_PRELOAD zstd -q -f -1 -o " + shell_quote(path)
         : compress == "xz" ? "env -u LD_PRELOAD xz -1 -T0 > " + shell_quote(path)
                            : "env -u LD_PRELOAD gzip -1 > " + shell_quote(path);
}

/* Whether `prog` is an executable file in one of the directories of `path` (PATH's syntax:
 * ':'-separated, an empty entry is the working directory). Searched here rather than by
 * running a shell: a shell started from the tool's initialisation inherits LD_PRELOAD, and
 * with it the tool, which would start the check again. */
inline bool on_path(const std::string &prog, const std::string &path) {
  if (prog.empty()) return false;
  size_t start = 0;
  while (true) {
    const size_t end = path.find(':', start);
    std::string dir = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const std::string file = (dir.empty() ? std::string(".") : dir) + "/" + prog;
    struct stat st;
    if (stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(file.c_str(), X_OK) == 0) return true;
    if (end == std::string::npos) return false;
    start = end + 1;
  }
}

/* Why the compressor behind `pclose`'s `status` failed, or "" when it exited 0. */
inline std::string compressor_failure(int status) {
  if (status == -1) return "its exit status could not be read";
  if (WIFEXITED(status)) {
    const int code = WEXITSTATUS(status);
    if (code == 0) return "";
    if (code == 127) return "exit 127: not found";
    return "exit " + std::to_string(code);
  }
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

/* Closes a launch's trace: `piped` (GCL_COMPRESS) through pclose, whose status says whether the
 * compressor wrote it, else fclose. Returns why the trace is not whole on disk, or "" when it is.
 * Why: with GCL_COMPRESS=none the tool ignored fclose's result, so a disk that filled up (a raw
 * trace is GBs) left a trace cut off at stdio's last flush, listed in kernelslist as complete. */
inline std::string close_trace(FILE *f, bool piped) {
  if (piped) return compressor_failure(pclose(f));
  const bool write_failed = ferror(f) != 0;
  errno = 0;
  if (fclose(f) != 0) return std::string("write failed: ") + strerror(errno);
  if (write_failed) return "write failed";
  return "";
}

/* The line the tool prints when launch `launch`'s trace at `path` did not reach the disk whole
 * (`why`: close_trace's answer), compressed (`piped`, GCL_COMPRESS=`compress`) or not.
 * Why the file leads: the uncompressed case named GCL_TRACE_DIR, which holds every launch's
 * trace, and the compressed one named no file, so neither said which trace to remove or
 * record again; the path first, as gclsampler's own errors put it. */
inline std::string trace_failure(unsigned long long launch, const std::string &path, bool piped,
                                 const std::string &compress, const std::string &why) {
  const std::string what = piped ? "its GCL_COMPRESS=" + compress + " compressor failed" : "its trace is incomplete";
  return "gcl_tracer: " + path + ": launch " + std::to_string(launch) + ": " + what + " (" + why + ")";
}

}  // namespace gcl
