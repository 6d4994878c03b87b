# flowswitch: userspace packet datapath.
#
#   make            build ./build/<cc>/flowswitch (and ./flowswitch link)
#   make check      unit, replay, CLI, layering (and DPDK) tests
#   make demo       replay demo/demo.ini, then simulate demo/sim.ini
#   make valgrind   unit + replay tests under memcheck
#   make coverage   lcov HTML report + gcovr summary of src/ and backends/
#   make asan       unit tests built with -fsanitize=address,undefined
#   make tsan       control plane, PMD threads and keep-alive under ThreadSanitizer
#   make fuzz       libFuzzer harnesses (clang); make fuzz-run FUZZ_TIME=60
#   make bench      benchmarks (never part of check)
#   make install    PREFIX=/usr/local DESTDIR=
#   make clean
#
# Layers (docs/architecture.md): src/ the datapath core, sim/ the replay and
# simulation engine, app/ the flowswitch command, backends/ the devices.
# Each layer is compiled with only the include paths it may use, so an
# include against the layering fails to compile.

ifeq ($(origin CC),default)
CC := gcc
endif
CCNAME := $(notdir $(firstword $(CC)))
BUILD ?= build/$(CCNAME)
PREFIX ?= /usr/local
DESTDIR ?=
FUZZ_TIME ?= 60
COVERAGE_MIN ?= 0

# Missing Debian packages are installed (as root) or named before anything
# is compiled: this runs while make reads this file, so no compile of a
# parallel build can start first. The set follows the goals.
DEPS_SET := build
ifneq ($(filter check unit replay valgrind coverage asan tsan fuzz fuzz-run check-dpdk,$(MAKECMDGOALS)),)
DEPS_SET := test
endif
ifneq ($(filter bench bench-build,$(MAKECMDGOALS)),)
DEPS_SET := bench
endif
ifeq ($(filter clean,$(MAKECMDGOALS)),)
DEPS_STATUS := $(shell scripts/install-deps --check $(DEPS_SET) >&2; echo $$?)
ifneq ($(DEPS_STATUS),0)
$(error missing Debian packages (see above))
endif
endif

VERSION := 0.1.0
WARN := -Wall -Wextra -Werror
# No fused multiply-add contraction: the simulator's floating point must
# give the same bits with gcc and clang on every target.
CSTD := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -ffp-contract=off
# valgrind 3.19 cannot read clang 14's default DWARF 5: ask for DWARF 4.
DEBUG_FLAGS := $(if $(filter clang%,$(CCNAME)),-gdwarf-4,-g)
OPT ?= -O2 $(DEBUG_FLAGS)
CFLAGS ?=
EXTRA_CFLAGS ?=
BASE_CFLAGS = $(CSTD) $(OPT) $(WARN) -DFS_VERSION='"$(VERSION)"' $(DPDK_DEF) $(CFLAGS) \
              $(EXTRA_CFLAGS)
LDLIBS_CORE := -lm -lpthread
LDLIBS_IO := -lpcap -linih -ljansson
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
# them (DPDK_LINK=static, the default, as OVS links DPDK): no PLT, and the
# per-lcore variables every mbuf alloc/free reads are one %fs load instead of
# a __tls_get_addr call. Every Debian PMD is linked in, so EAL loads no
# plugin. libpcap's static dependency list names libsystemd (through dbus),
# which the shared libpcap it links does not need. DPDK_LINK=shared links
# DPDK's shared libraries, as the test and bench programs always do.
DPDK_LINK ?= $(if $(wildcard $(shell pkg-config --variable=libdir libdpdk)/librte_eal.a),static,shared)
ifeq ($(DPDK_LINK),static)
DPDK_BIN_LIBS := $(filter-out -lsystemd,$(shell pkg-config --static --libs libdpdk))
else ifeq ($(DPDK_LINK),shared)
DPDK_BIN_LIBS := $(DPDK_LIBS)
else
$(error DPDK_LINK must be static or shared, not '$(DPDK_LINK)')
endif
DPDK_DEF := -DHAVE_DPDK
endif

# Include paths of each layer: dependencies point down.
CORE_INC := -Isrc
SIM_INC := -I. -Isrc -Isim
APP_INC := -I. -Isrc -Isim -Iapp
PROVIDER_DIR := $(BUILD)/provider
BACKEND_INC := -I$(PROVIDER_DIR)
TEST_INC := -I. -Isrc -Isim -Iapp
# What a backend may include: the provider contract and what it includes.
PROVIDER_HDRS := netdev-provider.h netdev.h netdev-caps.h packet.h offload.h proto.h util.h

# Every object depends on a stamp of the flags it was built with: a change
# of flags, compiler or DPDK detection rebuilds what it affects.
FLAGS_STAMP := $(BUILD)/.flags
FLAGS_TEXT := $(CC) $(BASE_CFLAGS) $(DPDK_CFLAGS) $(LDFLAGS) $(DPDK_LINK) $(HAVE_DPDK)
ifeq ($(filter clean,$(MAKECMDGOALS)),)
$(shell mkdir -p $(BUILD) && { [ "$$(cat $(FLAGS_STAMP) 2>/dev/null)" = '$(FLAGS_TEXT)' ] || \
    printf '%s\n' '$(FLAGS_TEXT)' > $(FLAGS_STAMP); })
endif

CORE_SRC := $(wildcard src/*.c)
SIM_SRC := $(wildcard sim/*.c)
APP_SRC := $(filter-out app/main.c,$(wildcard app/*.c))
BACKEND_SRC := $(wildcard backends/dummy/*.c backends/pcap/*.c)
ifeq ($(HAVE_DPDK),yes)
BACKEND_SRC += $(DPDK_SRC)
endif
LIB_SRC := $(CORE_SRC) $(SIM_SRC) $(APP_SRC) $(BACKEND_SRC)
# Files the binary carries (app/embedded.h): the experiments' scenarios and
# the reference cost profile and the second profile the experiments
# compare it with, as a generated source of the app layer.
EMBED_SRC := $(sort $(wildcard sim/experiments/*.ini)) sim/profiles/reference.json \
             sim/profiles/xeon-vm-2.6ghz.json
EMBED_OBJ := $(BUILD)/gen/embedded.o
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o) $(EMBED_OBJ)
LIB := $(BUILD)/libflowswitch.a
BIN := $(BUILD)/flowswitch

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)

.PHONY: all check unit unit-build replay demo valgrind coverage asan fuzz \
        fuzz-run bench bench-build install clean dpdk-status

# ./flowswitch points at the default (gcc) build only.
TOP_LINK := $(if $(filter build/gcc,$(BUILD)),flowswitch)

all: dpdk-status $(BIN) $(TOP_LINK)

dpdk-status:
ifeq ($(HAVE_DPDK),yes)
	@echo "DPDK: libdpdk $(DPDK_VERSION) found, DPDK backend compiled in (flowswitch links DPDK $(DPDK_LINK))"
else
	@echo "DPDK: libdpdk not found (scripts/install-deps all installs it), DPDK backend not compiled"
endif

$(FLAGS_STAMP): ;

$(PROVIDER_DIR)/%.h: src/%.h $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	@ln -sf $(CURDIR)/$< $@

PROVIDER_LINKS := $(PROVIDER_HDRS:%=$(PROVIDER_DIR)/%)
.SECONDARY: $(PROVIDER_LINKS)

$(BUILD)/src/%.o: src/%.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(CORE_INC) -MMD -MP -c $< -o $@

$(BUILD)/sim/%.o: sim/%.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(SIM_INC) -MMD -MP -c $< -o $@

$(BUILD)/app/%.o: app/%.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(APP_INC) -MMD -MP -c $< -o $@

$(BUILD)/gen/embedded.c: scripts/embed $(EMBED_SRC)
	@mkdir -p $(dir $@)
	@scripts/embed $(EMBED_SRC) > $@.tmp && mv $@.tmp $@

$(EMBED_OBJ): $(BUILD)/gen/embedded.c app/embedded.h $(FLAGS_STAMP)
	$(CC) $(BASE_CFLAGS) $(APP_INC) -c $< -o $@

$(BUILD)/backends/%.o: backends/%.c $(FLAGS_STAMP) | $(PROVIDER_LINKS)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(BACKEND_INC) $(if $(filter backends/dpdk/%,$<),$(DPDK_CFLAGS)) \
	    -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BIN): $(BUILD)/app/main.o $(LIB)
	$(CC) $(BASE_CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS_IO) $(LDLIBS_CORE) \
	    $(if $(DPDK_DEF),$(DPDK_BIN_LIBS))

flowswitch: $(BIN)
	@ln -sf $(BIN) flowswitch

$(BUILD)/tests/%: tests/unit/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(TEST_INC) -Itests/unit $(LDFLAGS) -MMD -MP -o $@ $< $(LIB) \
	    -lcmocka $(LDLIBS_IO) $(LDLIBS_CORE) $(if $(DPDK_DEF),$(DPDK_LIBS))

unit-build: $(UNIT_BIN)

# With the DPDK backend compiled in, check also runs tests/dpdk.
DPDK_TESTS := $(if $(DPDK_DEF),--dpdk)

check: all
	@$(MAKE) --no-print-directory unit-build dpdk-tests-build
	@tests/run-tests --build $(BUILD) --bin $(BIN) $(DPDK_TESTS)

unit: all unit-build
	@tests/run-tests --build $(BUILD) --bin $(BIN) --only unit

replay: all
	@tests/run-tests --build $(BUILD) --bin $(BIN) --only replay

demo: all
	@./$(BIN) replay --out-dir $(BUILD)/demo demo/demo.ini
	@echo
	@./$(BIN) sim demo/sim.ini

valgrind: all
	@$(MAKE) --no-print-directory unit-build
	@tests/run-tests --build $(BUILD) --bin $(BIN) --valgrind

# Counters updated atomically: PMD, control and keep-alive threads run the
# same code at once, and racing plain increments leave gcov negative counts
# that gcovr refuses.
coverage:
	@rm -rf build/coverage
	@$(MAKE) --no-print-directory BUILD=build/coverage \
	    OPT="-O0 -g --coverage -fprofile-update=atomic" \
	    LDFLAGS="--coverage" all unit-build dpdk-tests-build
	@tests/run-tests --build build/coverage --bin build/coverage/flowswitch $(DPDK_TESTS)
	@mkdir -p build/coverage/html
	@lcov --quiet --capture --directory build/coverage --output-file build/coverage/lcov.info \
	    --rc lcov_branch_coverage=0 >/dev/null
	@lcov --quiet --extract build/coverage/lcov.info "$(CURDIR)/src/*" "$(CURDIR)/sim/*" \
	    "$(CURDIR)/app/*" "$(CURDIR)/backends/*" \
	    --output-file build/coverage/lcov.info >/dev/null
	@genhtml --quiet build/coverage/lcov.info --output-directory build/coverage/html >/dev/null
	@echo "coverage: HTML report in build/coverage/html/index.html"
	@echo "coverage of src/, sim/, app/ and backends/:"
	@gcovr --root . --filter src/ --filter sim/ --filter app/ --filter backends/ \
	    --print-summary -o build/coverage/gcovr-all.txt build/coverage
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
# client, keep-alive, and the control plane over real PMD threads with rule
# and knob changes under traffic (clang, its own build directory like asan).
TSAN_TESTS := test_ctl_server test_ctl_client test_keepalive test_ctl_run
.PHONY: tsan
tsan:
	@$(MAKE) --no-print-directory CC=clang BUILD=build/tsan \
	    OPT="-O1 -g -fsanitize=thread -fno-omit-frame-pointer" LDFLAGS="-fsanitize=thread" \
	    $(TSAN_TESTS:%=build/tsan/tests/%)
	@TSAN_OPTIONS="halt_on_error=1 exitcode=66" \
	    tests/run-tests --build build/tsan --bin build/tsan/flowswitch --only unit

FUZZ_CFLAGS := $(CSTD) -O1 -g $(WARN) $(TEST_INC) -DFS_VERSION='"$(VERSION)"' \
               -fsanitize=fuzzer,address,undefined
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=build/fuzz/%)

build/fuzz/%: tests/fuzz/%.c $(CORE_SRC) $(wildcard src/*.h)
	@mkdir -p build/fuzz
	clang $(FUZZ_CFLAGS) -o $@ $< $(CORE_SRC) $(LDLIBS_IO) $(LDLIBS_CORE)

# The ctl harnesses take the protocol module (and the error helper) only.
build/fuzz/fuzz_ctl_%: tests/fuzz/fuzz_ctl_%.c app/ctl-proto.c app/ctl-proto.h src/util.c
	@mkdir -p build/fuzz
	clang $(FUZZ_CFLAGS) -Iapp -o $@ $< app/ctl-proto.c src/util.c -ljansson

# The config harness adds the config module (and libinih), the pcap one the
# pcap backend (and libpcap) over the core.
build/fuzz/fuzz_config: tests/fuzz/fuzz_config.c tests/fuzz/fuzz_file.h app/config.c \
                        app/config.h $(CORE_SRC) $(wildcard src/*.h)
	@mkdir -p build/fuzz
	clang $(FUZZ_CFLAGS) -o $@ $< app/config.c $(CORE_SRC) $(LDLIBS_IO) $(LDLIBS_CORE)

build/fuzz/fuzz_pcap: tests/fuzz/fuzz_pcap.c tests/fuzz/fuzz_file.h backends/pcap/netdev-pcap.c \
                      backends/pcap/netdev-pcap.h $(CORE_SRC) $(wildcard src/*.h)
	@mkdir -p build/fuzz
	clang $(FUZZ_CFLAGS) -o $@ $< backends/pcap/netdev-pcap.c $(CORE_SRC) $(LDLIBS_IO) \
	    $(LDLIBS_CORE)

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
	$(CC) $(BASE_CFLAGS) $(TEST_INC) $(DPDK_CFLAGS) -Itests/dpdk $(LDFLAGS) -MMD -MP -o $@ $< \
	    $(LIB) -lcmocka $(LDLIBS_IO) $(LDLIBS_CORE) $(DPDK_LIBS)

.PHONY: dpdk-tests-build check-dpdk
ifeq ($(HAVE_DPDK),yes)
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
# bench_csum's rte_raw_cksum() anchors: each in its own translation unit,
# compiled as DPDK compiles itself (meson's release build type, -O3, with the
# machine flags libdpdk.pc gives: -march=corei7 on Debian), and the same at
# -march=native, with DPDK's compiler (Debian builds it with gcc; clang 14
# leaves its loop scalar at -O3, 4-5 GB/s) whatever CC is.
# rte_raw_cksum() is inline: no DPDK library is linked.
ifeq ($(HAVE_DPDK),yes)
CSUM_ANCHOR_CC ?= gcc
CSUM_RTE_MFLAGS := $(filter -m%,$(DPDK_CFLAGS))
CSUM_RTE_FLAGS_DPDK := -O3 $(CSUM_RTE_MFLAGS)
CSUM_RTE_FLAGS_NATIVE := -O3 $(CSUM_RTE_MFLAGS) -march=native
CSUM_ANCHOR_OBJ := $(BUILD)/bench/csum_rte_dpdk_flags.o $(BUILD)/bench/csum_rte_native.o
BENCH_CSUM_DEFS := -DHAVE_DPDK_BENCH \
    -DBENCH_RTE_FLAGS_DPDK='"$(CSUM_ANCHOR_CC) $(CSUM_RTE_FLAGS_DPDK)"' \
    -DBENCH_RTE_FLAGS_NATIVE='"$(CSUM_ANCHOR_CC) $(CSUM_RTE_FLAGS_NATIVE)"'
endif

$(BUILD)/bench/csum_rte_dpdk_flags.o: bench/csum_anchor_rte.c bench/csum_anchors.h
	@mkdir -p $(dir $@)
	$(CSUM_ANCHOR_CC) -g $(WARN) $(DPDK_CFLAGS) $(CSUM_RTE_FLAGS_DPDK) \
	    -DCSUM_ANCHOR_NAME=csum_rte_dpdk_flags -c $< -o $@

$(BUILD)/bench/csum_rte_native.o: bench/csum_anchor_rte.c bench/csum_anchors.h
	@mkdir -p $(dir $@)
	$(CSUM_ANCHOR_CC) -g $(WARN) $(DPDK_CFLAGS) $(CSUM_RTE_FLAGS_NATIVE) \
	    -DCSUM_ANCHOR_NAME=csum_rte_native -c $< -o $@

$(BUILD)/bench/bench_csum: bench/bench_csum.c bench/csum_anchors.h $(CSUM_ANCHOR_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(TEST_INC) $(BENCH_CSUM_DEFS) -o $@ $< $(CSUM_ANCHOR_OBJ) $(LIB) \
	    $(LDLIBS_IO) $(LDLIBS_CORE)

$(BUILD)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(TEST_INC) -o $@ $< $(LIB) $(LDLIBS_IO) $(LDLIBS_CORE) \
	    $(if $(DPDK_DEF),$(DPDK_LIBS))

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

-include $(LIB_OBJ:.o=.d) $(BUILD)/app/main.d $(UNIT_BIN:=.d) $(DPDK_TEST_BIN:=.d)
