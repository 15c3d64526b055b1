/* gcl_env.h: `env_test NAME DFLT LO HI` prints env_int's value of $NAME, or exits 2 with its line. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "gcl_env.h"

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: env_test NAME DFLT LO HI\n");
    return 64;
  }
  const int64_t v = gcl::env_int(argv[1], strtoll(argv[2], nullptr, 10), strtoll(argv[3], nullptr, 10),
                                 strtoll(argv[4], nullptr, 10), "in the test's range");
  printf("%" PRId64 "\n", v);
  return 0;
}
