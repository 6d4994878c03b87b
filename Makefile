# flowswitch: userspace packet datapath.
#
#   make            build ./build/<cc>/flowswitch (and ./flowswitch link)
#   make check      unit + replay tests, ends with "N passed, N failed"
#   make demo       replay the shipped testdata through demo/demo.ini
#   make valgrind   unit + replay tests under memcheck
#   make coverage   lcov HTML report + gcovr summary of src/ and backends/
#   make asan       unit tests built with -fsanitize=address,undefined
#   make tsan       control server and keep-alive tests under ThreadSanitizer
#   make fuzz       libFuzzer harnesses (clang); make fuzz-run FUZZ_TIME=60
#   make bench      benchmarks (never part of check)
#   make install    PREFIX=/usr/local DESTDIR=
#   make clean

ifeq ($(origin CC),default)
CC := gcc
endif
CCNAME := $(notdir $(firstword $(CC)))
BUILD ?= build/$(CCNAME)
PREFIX ?= /usr/local
DESTDIR ?=
FUZZ_TIME ?= 60
COVERAGE_MIN ?= 0

VERSION := 0.1.0
WARN := -Wall -Wextra -Werror
CSTD := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
# valgrind 3.19 cannot read clang 14's default DWARF 5: ask for DWARF 4.
DEBUG_FLAGS := $(if $(filter clang%,$(CCNAME)),-gdwarf-4,-g)
OPT ?= -O2 $(DEBUG_FLAGS)
CFLAGS ?=
EXTRA_CFLAGS ?=
ALL_CFLAGS = $(CSTD) $(OPT) $(WARN) -I. -Isrc -DFS_VERSION='"$(VERSION)"' \
             $(DPDK_DEF) $(CFLAGS) $(EXTRA_CFLAGS)
LDLIBS_CORE := -lm
LDLIBS_IO := -lpcap -linih
LDFLAGS ?=

# DPDK: the backend is compiled when pkg-config finds libdpdk.
HAVE_DPDK := $(shell pkg-config --exists libdpdk 2>/dev/null && echo yes)
DPDK_SRC := $(wildcard backends/dpdk/*.c)
ifeq ($(HAVE_DPDK),yes)
DPDK_VERSION := $(shell pkg-config --modversion libdpdk)
DPDK_CFLAGS := $(shell pkg-config --cflags libdpdk)
DPDK_LIBS := $(shell pkg-config --libs libdpdk)
# PMD-specific APIs called directly (rte_eth_vhost_*, rte_eth_from_rings in
# tests/dpdk) are not in libdpdk's list.
DPDK_LIBS += -lrte_net_vhost -lrte_net_ring
# The flowswitch binary links DPDK's static archives when libdpdk-dev ships
# them (DPDK_LINK=static, the default; OVS links DPDK statically too): calls
# into EAL, mempool and the PMDs go without the PLT, and the per-lcore
# variables that every mbuf alloc/free reads (the mempool cache) are one %fs
# load instead of a __tls_get_addr call (net_null forwarding: 219 -> 206
# instructions per packet). Every Debian PMD is linked in, so EAL loads no
# plugin. The system libraries stay shared; libpcap's static dependency list
# names libsystemd (through dbus), which a shared libpcap does not need.
# DPDK_LINK=shared links DPDK's shared libraries (EAL then loads the PMDs from
# Debian's plugin directory), as the test and bench programs always do.
DPDK_LINK ?= $(if $(wildcard $(shell pkg-config --variable=libdir libdpdk)/librte_eal.a),static,shared)
ifeq ($(DPDK_LINK),static)
DPDK_BIN_LIBS := $(filter-out -lsystemd,$(shell pkg-config --static --libs libdpdk))
else ifeq ($(DPDK_LINK),shared)
DPDK_BIN_LIBS := $(DPDK_LIBS)
else
$(error DPDK_LINK must be static or shared, not '$(DPDK_LINK)')
endif
ifneq ($(DPDK_SRC),)
DPDK_DEF := -DHAVE_DPDK
endif
endif

CORE_SRC := $(filter-out src/main.c,$(wildcard src/*.c))
BACKEND_SRC := $(wildcard backends/dummy/*.c backends/pcap/*.c)
ifeq ($(DPDK_DEF),-DHAVE_DPDK)
BACKEND_SRC += $(DPDK_SRC)
endif
# app/: the control socket (protocol, server, client) and PMD keep-alive;
# they build JSON answers with jansson.
APP_SRC := $(wildcard app/ctl*.c app/keepalive.c)
ALL_CFLAGS += -Iapp
LDLIBS_IO += -ljansson
LIB_SRC := $(CORE_SRC) $(BACKEND_SRC) $(APP_SRC)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB := $(BUILD)/libflowswitch.a
BIN := $(BUILD)/flowswitch

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TEST_HELPER_SRC := $(wildcard tests/unit/helpers/*.c)
TEST_HELPER_OBJ := $(TEST_HELPER_SRC:%.c=$(BUILD)/%.o)

FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)

.PHONY: all deps check unit unit-build replay demo valgrind coverage asan fuzz \
        fuzz-run bench bench-build install clean dpdk-status

# ./flowswitch points at the default (gcc) build only.
TOP_LINK := $(if $(filter build/gcc,$(BUILD)),flowswitch)

all: deps dpdk-status $(BIN) $(TOP_LINK)

deps:
	@scripts/install-deps --check build

dpdk-status:
ifeq ($(HAVE_DPDK),yes)
ifneq ($(DPDK_SRC),)
	@echo "DPDK: libdpdk $(DPDK_VERSION) found, DPDK backend compiled in (flowswitch links DPDK $(DPDK_LINK))"
else
	@echo "DPDK: libdpdk $(DPDK_VERSION) found; backends/dpdk has no sources yet, not compiled"
endif
else
	@echo "DPDK: libdpdk not found (apt-get install libdpdk-dev), DPDK backend not compiled"
endif

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(if $(filter backends/dpdk/%,$<),$(DPDK_CFLAGS)) -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BIN): $(BUILD)/src/main.o $(LIB)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS_IO) $(LDLIBS_CORE) $(if $(DPDK_DEF),$(DPDK_BIN_LIBS))

flowswitch: $(BIN)
	@ln -sf $(BIN) flowswitch

$(BUILD)/tests/%: tests/unit/%.c $(TEST_HELPER_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/unit $(LDFLAGS) -MMD -MP -o $@ $< $(TEST_HELPER_OBJ) $(LIB) \
	    -lcmocka $(LDLIBS_IO) $(LDLIBS_CORE) $(if $(DPDK_DEF),$(DPDK_LIBS))

unit-build: deps $(UNIT_BIN)

# With the DPDK backend compiled in, check also runs tests/dpdk (DPDK_TESTS=1).
DPDK_TESTS := $(if $(DPDK_DEF),--dpdk)

check: all
	@scripts/install-deps --check test
	@$(MAKE) --no-print-directory unit-build dpdk-tests-build
	@tests/run-tests --build $(BUILD) --bin $(BIN) $(DPDK_TESTS)

unit: all unit-build
	@tests/run-tests --build $(BUILD) --bin $(BIN) --only unit

replay: all
	@tests/run-tests --build $(BUILD) --bin $(BIN) --only replay

demo: all
	@./$(BIN) replay --out-dir $(BUILD)/demo demo/demo.ini

valgrind: all
	@scripts/install-deps --check test
	@$(MAKE) --no-print-directory unit-build
	@tests/run-tests --build $(BUILD) --bin $(BIN) --valgrind

coverage:
	@scripts/install-deps --check test
	@rm -rf build/coverage
	@$(MAKE) --no-print-directory BUILD=build/coverage OPT="-O0 -g --coverage" \
	    LDFLAGS="--coverage" all unit-build dpdk-tests-build
	@tests/run-tests --build build/coverage --bin build/coverage/flowswitch $(DPDK_TESTS)
	@mkdir -p build/coverage/html
	@lcov --quiet --capture --directory build/coverage --output-file build/coverage/lcov.info \
	    --rc lcov_branch_coverage=0 >/dev/null
	@lcov --quiet --extract build/coverage/lcov.info "$(CURDIR)/src/*" "$(CURDIR)/backends/*" \
	    --output-file build/coverage/lcov.info >/dev/null
	@genhtml --quiet build/coverage/lcov.info --output-directory build/coverage/html >/dev/null
	@echo "coverage: HTML report in build/coverage/html/index.html"
	@echo "coverage of src/ and backends/:"
	@gcovr --root . --filter src/ --filter backends/ --print-summary \
	    -o build/coverage/gcovr-src-backends.txt build/coverage
	@echo "coverage of src/ (CI requires $(COVERAGE_MIN)% of lines or more):"
	@gcovr --root . --filter src/ --print-summary --fail-under-line $(COVERAGE_MIN) \
	    -o build/coverage/gcovr-src.txt build/coverage

asan:
	@$(MAKE) --no-print-directory CC=clang BUILD=build/asan \
	    OPT="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	    LDFLAGS="-fsanitize=address,undefined" all unit-build
	@ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    tests/run-tests --build build/asan --bin build/asan/flowswitch

# ThreadSanitizer over the tests where threads meet: the control server and
# keep-alive (clang, its own build directory like asan).
TSAN_TESTS := test_ctl_server test_ctl_client test_keepalive
.PHONY: tsan
tsan:
	@$(MAKE) --no-print-directory CC=clang BUILD=build/tsan \
	    OPT="-O1 -g -fsanitize=thread -fno-omit-frame-pointer" LDFLAGS="-fsanitize=thread" \
	    deps $(TSAN_TESTS:%=build/tsan/tests/%)
	@TSAN_OPTIONS="halt_on_error=1 exitcode=66" \
	    tests/run-tests --build build/tsan --bin build/tsan/flowswitch --only unit

FUZZ_CFLAGS := $(CSTD) -O1 -g $(WARN) -I. -Isrc -DFS_VERSION='"$(VERSION)"' -fsanitize=fuzzer,address,undefined
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=build/fuzz/%)

build/fuzz/%: tests/fuzz/%.c $(CORE_SRC) $(wildcard src/*.h)
	@mkdir -p build/fuzz
	clang $(FUZZ_CFLAGS) -o $@ $< $(CORE_SRC) $(LDLIBS_IO) -lm

# The ctl harnesses take the protocol module (and the error helper) only.
build/fuzz/fuzz_ctl_%: tests/fuzz/fuzz_ctl_%.c app/ctl-proto.c app/ctl-proto.h src/util.c
	@mkdir -p build/fuzz
	clang $(FUZZ_CFLAGS) -Iapp -o $@ $< app/ctl-proto.c src/util.c -ljansson

fuzz: $(FUZZ_BIN)

fuzz-run: fuzz
	@set -e; for f in $(FUZZ_BIN); do \
	    n=$$(basename $$f); mkdir -p build/fuzz/corpus-$$n; \
	    seeds=tests/fuzz/seeds/$${n#fuzz_}; \
	    echo "fuzz: $$n for $(FUZZ_TIME) s"; \
	    $$f -max_total_time=$(FUZZ_TIME) -print_final_stats=1 build/fuzz/corpus-$$n \
	        $$( [ -d $$seeds ] && echo $$seeds ) 2>build/fuzz/$$n.log \
	        || { tail -50 build/fuzz/$$n.log; exit 1; }; \
	    grep -E "stat::number_of_executed_units|Done" build/fuzz/$$n.log | tail -2; \
	done

# DPDK tests (tests/dpdk/*.c cmocka programs + tests/dpdk/run), only when
# the DPDK backend is compiled in.
DPDK_TEST_SRC := $(wildcard tests/dpdk/*.c)
DPDK_TEST_BIN := $(DPDK_TEST_SRC:tests/dpdk/%.c=$(BUILD)/tests-dpdk/%)

$(BUILD)/tests-dpdk/%: tests/dpdk/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DPDK_CFLAGS) -Itests/dpdk $(LDFLAGS) -MMD -MP -o $@ $< $(LIB) \
	    -lcmocka $(LDLIBS_IO) $(LDLIBS_CORE) $(DPDK_LIBS)

.PHONY: dpdk-tests-build check-dpdk
ifeq ($(DPDK_DEF),-DHAVE_DPDK)
dpdk-tests-build: $(DPDK_TEST_BIN)
check-dpdk: all dpdk-tests-build
	@tests/dpdk/run --build $(BUILD) --bin $(BIN)
else
dpdk-tests-build:
	@true
check-dpdk:
	@echo "DPDK backend not compiled: DPDK tests skipped"
endif

# Benchmarks: bench/bench_*.c link against the library; bench_fwd is also
# built with the checksum machinery compiled out (-DFS_CSUM_OFF) as the
# baseline of its on/off ratio. bench/run runs them side by side.
BENCH_SRC := $(wildcard bench/bench_*.c)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
BENCH_OFF := build/$(CCNAME)-csum-off
ifeq ($(HAVE_DPDK),yes)
BENCH_DPDK_CFLAGS := -DHAVE_DPDK_BENCH $(DPDK_CFLAGS)
BENCH_DPDK_LIBS := $(DPDK_LIBS)
endif

$(BUILD)/bench/bench_csum: bench/bench_csum.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(BENCH_DPDK_CFLAGS) -o $@ $< $(LIB) $(LDLIBS_IO) $(LDLIBS_CORE) \
	    $(BENCH_DPDK_LIBS)

$(BUILD)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIB) $(LDLIBS_IO) $(LDLIBS_CORE) $(if $(DPDK_DEF),$(DPDK_LIBS))

bench-build: all $(BENCH_BIN)
	@$(MAKE) --no-print-directory BUILD=$(BENCH_OFF) EXTRA_CFLAGS=-DFS_CSUM_OFF \
	    $(BENCH_OFF)/bench/bench_fwd

bench: bench-build
	@bench/run --build $(BUILD) --off-build $(BENCH_OFF) --bin $(BIN)

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/doc/flowswitch
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/flowswitch
	install -m 644 README.md $(DESTDIR)$(PREFIX)/share/doc/flowswitch/README.md

clean:
	rm -rf build flowswitch

-include $(LIB_OBJ:.o=.d) $(BUILD)/src/main.d $(UNIT_BIN:=.d) $(DPDK_TEST_BIN:=.d)
