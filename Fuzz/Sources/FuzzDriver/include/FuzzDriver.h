#ifndef HAUL_FUZZ_DRIVER_H
#define HAUL_FUZZ_DRIVER_H
#include <stddef.h>
#include <stdint.h>

typedef int (*haul_fuzz_callback)(const uint8_t *data, size_t size);

/// Provided by libFuzzer (-sanitize=fuzzer). SwiftPM links an executable's entry point as
/// `<Target>_main`, which shadows libFuzzer's own `main`, so each harness calls this itself.
int LLVMFuzzerRunDriver(int *argc, char ***argv, haul_fuzz_callback callback);

/// Runs libFuzzer with `callback` as the test function.
int haul_fuzz_run(int argc, char **argv, haul_fuzz_callback callback);
#endif
