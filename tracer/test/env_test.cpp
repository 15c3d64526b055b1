/* gcl_env.h: `env_test NAME DFLT LO HI` prints env_int's value of $NAME, or exits 2 with its line;
 * `env_test range BEGIN END` prints kernel_range_error's line for that GCL_KERNEL_BEGIN/END, or "ok". */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <string>

#include "gcl_env.h"

int main(int argc, char **argv) {
  if (argc == 4 && std::string(argv[1]) == "range") {
    const std::string err = gcl::kernel_range_error(strtoll(argv[2], nullptr, 10), strtoll(argv[3], nullptr, 10));
    printf("%s\n", err.empty() ? "ok" : err.c_str());
    return 0;
  }
  if (argc != 5) {
    fprintf(stderr, "usage: env_test NAME DFLT LO HI\n");
    return 64;
  }
  const int64_t v = gcl::env_int(argv[1], strtoll(argv[2], nullptr, 10), strtoll(argv[3], nullptr, 10),
                                 strtoll(argv[4], nullptr, 10), "in the test's range");
  printf("%" PRId64 "\n", v);
  return 0;
}
