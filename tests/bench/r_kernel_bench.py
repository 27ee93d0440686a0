#!/usr/bin/python3
"""The R kernel (`ir`, Debian's R + IRkernel) beside sandgate-python
(`python`): language_bench.py for those two, executing `1+1`, without the
pool-hit creates (docs/benchmarks.md, "R kernel (`ir`) beside
sandgate-python").

    SANDGATE_BUILD_DIR=build /usr/bin/python3 tests/bench/r_kernel_bench.py [--runs 10] [--executes 200]

Run as root.
"""

import sys

import language_bench

if __name__ == "__main__":
    sys.argv[1:1] = ["--languages", "python,ir", "--code", "1+1", "--pool-creates", "0"]
    language_bench.main()
