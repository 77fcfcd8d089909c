#include "FuzzDriver.h"

int haul_fuzz_run(int argc, char **argv, haul_fuzz_callback callback) {
    return LLVMFuzzerRunDriver(&argc, &argv, callback);
}
