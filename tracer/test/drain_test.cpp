/* drain_test -- gcl::drain_buffer (GCL_BUFFER_MB's host side) against a host array standing in
 * for the device buffer: for launches that claimed fewer, as many and more records than the
 * buffer holds, and staging areas of 1, 3, 7 and 64 records, every record inside the capacity
 * is taken once, in slot order, and nothing past it. Prints one summary line; exit 1 on the
 * first failure (with what went wrong). Built and run by tests/test_tracer_format.py. */
#include <stdio.h>
#include <string.h>

#include <vector>

#include "gcl_format.h"

int main() {
  int cases = 0;
  for (unsigned n_claimed : {0u, 1u, 5u, 20u, 21u, 50u}) {
    for (unsigned capacity : {0u, 1u, 20u, 21u}) {
      for (size_t stage : {1u, 3u, 7u, 64u}) {
        std::vector<gcl::Record> device(capacity);
        for (unsigned i = 0; i < capacity; i++) {
          device[i] = gcl::Record();
          device[i].pc = i; /* the slot, to check order */
        }
        std::vector<gcl::Record> staging(stage);
        std::vector<uint32_t> seen;
        const unsigned long long got = gcl::drain_buffer(
            (unsigned long long)n_claimed * sizeof(gcl::Record), (unsigned long long)capacity * sizeof(gcl::Record),
            staging,
            [&](gcl::Record *dst, unsigned long long off, unsigned long long len) {
              memcpy(dst, reinterpret_cast<const char *>(device.data()) + off, len);
            },
            [&](const gcl::Record &r) { seen.push_back(r.pc); });
        const unsigned want = n_claimed < capacity ? n_claimed : capacity;
        bool ok = got == want && seen.size() == want;
        for (unsigned i = 0; ok && i < want; i++) ok = seen[i] == i;
        if (!ok) {
          fprintf(stderr, "claimed %u, capacity %u, staging %zu: took %llu records, want %u in slot order\n",
                  n_claimed, capacity, stage, got, want);
          return 1;
        }
        cases++;
      }
    }
  }
  printf("%d cases ok\n", cases);
  return 0;
}
