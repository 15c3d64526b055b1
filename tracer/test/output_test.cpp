/*
 * output_test.cpp -- gcl_output.h: finding the compressor on PATH, naming why it failed, and
 * closing a trace file (piped or not) with what went wrong said, and the line that names it.
 *
 *   output_test DIR   DIR: an empty scratch directory; exit 0 when every check holds
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <string>

#include "gcl_output.h"

static int failures = 0;
static void check(bool ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "FAILED: %s\n", what);
    failures++;
  }
}

static void touch(const std::string &file, mode_t mode) {
  FILE *f = fopen(file.c_str(), "w");
  if (f) fclose(f);
  chmod(file.c_str(), mode);
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  const std::string dir = argv[1];
  mkdir((dir + "/bin").c_str(), 0755);
  mkdir((dir + "/other").c_str(), 0755);
  mkdir((dir + "/bin/xz").c_str(), 0755);   /* a directory of that name is no program */
  touch(dir + "/bin/zstd", 0755);
  touch(dir + "/other/gzip", 0644);         /* not executable */
  check(gcl::compressor_program("zstd") == "zstd" && gcl::compressor_program("gz") == "gzip" &&
            gcl::compressor_program("xz") == "xz" && gcl::compressor_program("none").empty(),
        "GCL_COMPRESS names its program");
  check(gcl::on_path("zstd", dir + "/other:" + dir + "/bin"), "found in a later PATH entry");
  check(gcl::on_path("zstd", dir + "/bin"), "found in the only PATH entry");
  check(!gcl::on_path("zstd", dir + "/other"), "absent from PATH");
  check(!gcl::on_path("zstd", ""), "empty PATH: the working directory only");
  check(!gcl::on_path("gzip", dir + "/other"), "a file without the execute bit");
  check(!gcl::on_path("xz", dir + "/bin"), "a directory");
  check(!gcl::on_path("", dir + "/bin"), "no program");
  check(gcl::compressor_failure(0).empty(), "exit 0 is no failure");
  check(gcl::compressor_failure(127 << 8) == "exit 127: not found", "exit 127");
  check(gcl::compressor_failure(1 << 8) == "exit 1", "exit 1");
  check(gcl::compressor_failure(9) == "killed by signal 9", "a signal");
  check(gcl::compressor_failure(-1) == "its exit status could not be read", "pclose failed");
  /* GCL_COMPRESS=none: a trace whose bytes did not all reach the disk (here /dev/full, whose
   * every write fails with ENOSPC once stdio flushes) is a failure, named; a good one is not */
  FILE *full = fopen("/dev/full", "w");
  if (full) {
    fputs("-kernel name = _Z1kv\n", full);
    check(gcl::close_trace(full, false).find("No space left") != std::string::npos, "a trace cut short by ENOSPC");
  }
  FILE *good = fopen((dir + "/kernel-1.trace").c_str(), "w");
  check(good && fputs("-kernel name = _Z1kv\n", good) >= 0 && gcl::close_trace(good, false).empty(),
        "a trace written whole");
  FILE *pipe = popen("cat > /dev/null", "w");
  check(pipe && gcl::close_trace(pipe, true).empty(), "a compressor that exits 0");
  FILE *bad = popen("exit 3", "w");
  check(bad && gcl::close_trace(bad, true) == "exit 3", "a compressor that exits 3");
  /* the line said when a trace is not whole names its file, not GCL_TRACE_DIR: a directory of
   * thousands of launches' traces does not say which one to delete or trace again */
  const std::string plain = gcl::trace_failure(7, dir + "/kernel-7.trace", false, "none", "write failed: No space left");
  check(plain == "gcl_tracer: " + dir + "/kernel-7.trace: launch 7: its trace is incomplete (write failed: No space "
                "left)", "an uncompressed trace cut short names its file");
  const std::string piped = gcl::trace_failure(7, dir + "/kernel-7.trace.zst", true, "zstd", "exit 1");
  check(piped == "gcl_tracer: " + dir + "/kernel-7.trace.zst: launch 7: its GCL_COMPRESS=zstd compressor failed "
                 "(exit 1)", "a compressed trace whose compressor failed names its file");
  /* the compressor's command takes any path as one word: an apostrophe in GCL_TRACE_DIR was a
   * shell syntax error (sh exits 2 unread, the program dies of SIGPIPE), a space two words */
  check(gcl::shell_quote("a b") == "'a b'" && gcl::shell_quote("o'b") == "'o'\\''b'" && gcl::shell_quote("") == "''",
        "shell_quote");
  const std::string odd = dir + "/o'brien $HOME `x` \"q\"";
  mkdir(odd.c_str(), 0755);
  for (const char *compress : {"zstd", "xz", "gz"}) {
    if (!gcl::on_path(gcl::compressor_program(compress), getenv("PATH") ? getenv("PATH") : "")) continue;
    const std::string out = odd + "/kernel-1.trace." + compress;
    FILE *z = popen(gcl::compressor_command(compress, out).c_str(), "w");
    check(z && fputs("-kernel name = _Z1kv\n", z) >= 0 && gcl::close_trace(z, true).empty(),
          (std::string("GCL_COMPRESS=") + compress + " into a directory named with ' $ ` \" and spaces").c_str());
    struct stat st;
    check(stat(out.c_str(), &st) == 0 && st.st_size > 0,
          (std::string("GCL_COMPRESS=") + compress + " wrote the file it was named").c_str());
  }
  if (failures == 0) printf("output: all checks hold\n");
  return failures ? 1 : 0;
}
