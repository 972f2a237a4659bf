# polyprof build. `make` builds build/polyprof; `make test` installs deps, builds and runs every
# test stage; `make run` profiles the host for 10 s into ./out; `make install` installs the
# binary and its resources (PREFIX, DESTDIR). `make V=1` shows the commands.
CC       := gcc
CLANG    := clang
BPFTOOL  := bpftool
BUILD    := build

ifeq ($(V),1)
Q        :=
say      :=
else
Q        := @
say       = @printf '  %-6s %s\n' $(1) $(2);
endif

WARN     := -Wall -Wextra -Werror -Wno-missing-field-initializers
CFLAGS   := -std=gnu11 -O2 -g $(WARN) -fno-omit-frame-pointer -D_GNU_SOURCE -I. -I$(BUILD)
DEPFLAGS  = -MMD -MP -MF $(@:.o=.d)
LDLIBS   := -lbpf -lelf -lz -llzma -ljansson -lpcre2-8 -larchive -ldl -lpthread -liberty -lm -lwebsockets
SAN      := -fsanitize=address,undefined -fno-sanitize-recover=undefined
# UBSan findings abort (a fuzz input that only printed a report passed the stage)
FUZZSAN  := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined

LIB_SRC  := $(sort $(wildcard base/*.c orchestrator/*.c merge/*.c runtimes/*.c runtimes/*/*.c))
LIB_SRC  := $(filter-out orchestrator/main.c,$(LIB_SRC))
BPF_SRC  := $(wildcard bpf/*.bpf.c)
SKELS    := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRC))
# Generated headers: the BPF skeletons and the flame graph page (merge/html.c).
GEN_HDRS := $(SKELS) $(BUILD)/flamegraph_template.h

# The library is compiled once per flavour and linked by the binary, the tests, the benchmarks
# and every fuzz target: plain (binary, valgrind tests), sanitized (unit tests), fuzz (clang).
OBJ      := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRC))
SAN_OBJ  := $(patsubst %.c,$(BUILD)/san/%.o,$(LIB_SRC))
FUZZ_OBJ := $(patsubst %.c,$(BUILD)/fuzzobj/%.o,$(LIB_SRC))
LIB      := $(BUILD)/libpolyprof.a
SAN_LIB  := $(BUILD)/libpolyprof-san.a
FUZZ_LIB := $(BUILD)/libpolyprof-fuzz.a

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
UNIT_VG  := $(patsubst tests/unit/%.c,$(BUILD)/tests/vg/%,$(UNIT_SRC))
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRC))

.PHONY: all deps run test unit valgrind integration fuzz summary bench format format-check layers \
        clean install tools image
# Keep the object files of pattern rules (Make would delete them as intermediates).
.SECONDARY:
# A recipe that fails leaves no half-written target behind.
.DELETE_ON_ERROR:

all: $(BUILD)/polyprof tools

# ---- dependencies (Debian packages; idempotent and quiet when present) ----
DEB_PKGS := gcc make clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev liblzma-dev \
            libjansson-dev libpcre2-dev libcurl4-openssl-dev libiberty-dev libcriterion-dev libarchive-dev \
            libclang-rt-14-dev valgrind python3 python3-pip python3-pytest python3-pytest-timeout \
            golang-go linux-perf stress-ng clang-format ruby php-cli php8.2-fpm \
            openjdk-17-jdk-headless \
            nodejs binutils chromium curl libwebsockets-dev podman runc debootstrap
deps:
	@missing=$$(for p in $(DEB_PKGS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
	    | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	    echo "installing: $$missing"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) \
	        >/tmp/polyprof-deps.log 2>&1 || { cat /tmp/polyprof-deps.log; exit 1; }; \
	fi
	@bash tests/tools/install.sh

# ---- resources: one layout for every way polyprof is run (README "Installing and resources").
# A resources directory holds the files polyprof looks up by their path below it
# (base/resource.h): python/py-spy, ruby/rbspy, java/async-profiler.jar,
# node/linux-perf/<libc>/<major>/linux-perf.node. The checkout's resources/ is that directory
# for build/polyprof (search step 4), and the source of `make install`'s: `make deps` builds the
# Node addon there, and `make tools` (part of `make all`) copies there the pinned tools `make
# deps` fetched or built into PP_TOOLS (default /var/cache/polyprof/tools), git-ignored, so that
# build/polyprof finds them as `make run`, `make install` and the image do. Not build/resources:
# the unit tests' binaries (build/tests/) would find it as their ../resources, where tests of
# "tool not found" expect nothing. A copy (not a link): the tree is self-contained, and the
# image's build context takes it as it is. A tool missing from PP_TOOLS is left as it is
# (PP_TOOLS= copies nothing). ----
PP_TOOLS ?= /var/cache/polyprof/tools
PYSPY_VERSION := $(shell sed -n 's/^PYSPY_VERSION=//p' tests/tools/install.sh 2>/dev/null)
ASPROF_VERSION := $(shell sed -n 's/^ASPROF_VERSION=//p' tests/tools/install.sh 2>/dev/null)
RBSPY_VERSION := $(shell sed -n 's/^RBSPY_VERSION=//p' tests/tools/install.sh 2>/dev/null)
# <path in a resources directory>:<mode>:<path in PP_TOOLS>
PP_TOOL_FILES := python/py-spy:0755:py-spy-$(PYSPY_VERSION)/py-spy \
                 java/async-profiler.jar:0644:async-profiler-$(ASPROF_VERSION)/java/async-profiler.jar \
                 ruby/rbspy:0755:rbspy-$(RBSPY_VERSION)/bin/rbspy

tools:
	$(Q)[ -z "$(PP_TOOLS)" ] || for t in $(PP_TOOL_FILES); do \
	    rel=$${t%%:*}; m=$${t#*:}; m=$${m%%:*}; src="$(PP_TOOLS)/$${t##*:}"; \
	    dst="resources/$$rel"; \
	    if [ -f "$$src" ] && ! cmp -s "$$src" "$$dst"; then \
	        install -D -m $$m "$$src" "$$dst" || exit 1; \
	        printf '  %-6s %s\n' TOOL "$$dst"; fi; done

# ---- install: PREFIX/bin/polyprof and PREFIX/share/polyprof/resources, the layout the resource
# search path (base/resource.h) finds from the binary's own directory, so the tree works under
# any PREFIX, DESTDIR or chroot. The resources are the checkout's resources/ (the tools and the
# Node addon above; but flamegraph/, compiled into the binary (merge/html.c), and dot files),
# executables staying executable. LOGDIR (the default --log-file's directory, which
# polyprof does not create) is made too; LOGDIR= skips it. The Dockerfile runs this target. ----
PREFIX   ?= /usr/local
LOGDIR   ?= /var/log/polyprof
RES_DEST  = $(DESTDIR)$(PREFIX)/share/polyprof/resources

install: $(BUILD)/polyprof tools
	$(call say,INST,$(DESTDIR)$(PREFIX))
	$(Q)install -D -m 0755 $(BUILD)/polyprof $(DESTDIR)$(PREFIX)/bin/polyprof
	$(Q)if [ -n "$(LOGDIR)" ]; then install -d -m 0755 "$(DESTDIR)$(LOGDIR)"; fi
	$(Q)cd resources && find . -type f ! -name '.*' ! -path './flamegraph/*' | while read -r f; do \
	    if [ -x "$$f" ]; then m=0755; else m=0644; fi; \
	    install -D -m $$m "$$f" "$(RES_DEST)/$$f" || exit 1; done

# ---- the container image (docker/image.sh, docs/deploy.md): podman builds docker/Dockerfile on a
# Debian 12 base made by debootstrap, with the tools `make` copied into resources/. Not part of `make
# test`: tests/integration/test_image.py uses the image built here (and builds it when it is
# missing). IMAGE, BASE_IMAGE, ROOTFS, DEBIAN_MIRROR: see the script. ----
image: all
	$(Q)bash docker/image.sh

# ---- BPF: CO-RE objects and libbpf skeletons ----
BPF_ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/' \
              -e 's/ppc64le/powerpc/' -e 's/mips.*/mips/' -e 's/riscv64/riscv/' \
              -e 's/loongarch64/loongarch/' -e 's/s390x/s390/')

$(BUILD)/%.bpf.o: bpf/%.bpf.c | $(BUILD)
	$(call say,BPF,$<)
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -Wall -Werror -I. \
	    -MMD -MP -MF $(@:.o=.d) -c $< -o $@
	$(Q)llvm-strip -g $@ 2>/dev/null || true

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(call say,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $*_bpf > $@.tmp && mv $@.tmp $@

$(BUILD):
	@mkdir -p $@

# The flame graph page, compiled in as a NUL-terminated char array (merge/html.c).
$(BUILD)/flamegraph_template.h: resources/flamegraph/flamegraph.html | $(BUILD)
	$(call say,GEN,$@)
	$(Q){ echo 'static const char pp_flamegraph_template[] = {'; \
	    od -An -v -tx1 $< | sed -e 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'; echo '0};'; } > $@.tmp && \
	    mv $@.tmp $@

# ---- C objects: header dependencies come from the compiler (-MMD); the generated headers are
# built before any object (order-only), and only objects that include one depend on it. ----
$(BUILD)/obj/%.o: %.c | $(GEN_HDRS)
	$(call say,CC,$<)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/san/%.o: %.c | $(GEN_HDRS)
	$(call say,CC-SAN,$<)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -O1 $(SAN) $(DEPFLAGS) -c $< -o $@

$(BUILD)/fuzzobj/%.o: %.c | $(GEN_HDRS)
	$(call say,CC-FUZ,$<)
	@mkdir -p $(dir $@)
	$(Q)$(CLANG) -std=gnu11 -g -O1 $(WARN) -D_GNU_SOURCE -I. -I$(BUILD) $(FUZZSAN) $(DEPFLAGS) -c $< -o $@

$(LIB): $(OBJ)
$(SAN_LIB): $(SAN_OBJ)
$(FUZZ_LIB): $(FUZZ_OBJ)
$(LIB) $(SAN_LIB) $(FUZZ_LIB):
	$(call say,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/polyprof: $(BUILD)/obj/orchestrator/main.o $(LIB)
	$(call say,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# ---- tests ----
$(BUILD)/tests/%: $(BUILD)/san/tests/unit/%.o $(SAN_LIB)
	$(call say,LINK,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -O1 $(SAN) -o $@ $^ $(LDLIBS) -lcriterion

$(BUILD)/tests/vg/%: $(BUILD)/obj/tests/unit/%.o $(LIB)
	$(call say,LINK,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) -lcriterion

$(BUILD)/fuzz/%: $(BUILD)/fuzzobj/tests/fuzz/%.o $(FUZZ_LIB)
	$(call say,LINK,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -o $@ $^ $(LDLIBS)

# Each stage records its counts in build/results/<stage>.json and prints one line
# "<stage>: N passed, N failed, N skipped"; `summary` adds the totals. STRICT=1 (set when
# CI=true) fails a stage on any skip not listed in tests/expected-skips.
STAGES   := python3 tests/stages.py
FUZZ_SECONDS ?= 8

unit: $(UNIT_BIN)
	@$(STAGES) unit $(UNIT_BIN)

valgrind: $(UNIT_VG)
	@$(STAGES) valgrind $(UNIT_VG)

fuzz: $(FUZZ_BIN)
	@$(STAGES) fuzz --seconds $(FUZZ_SECONDS) $(FUZZ_BIN)

integration: $(BUILD)/polyprof tools $(BUILD)/bench/bench_jfr
	@$(STAGES) integration

summary:
	@$(STAGES) summary

format-check:
	@$(STAGES) format

layers:
	@$(STAGES) layers

# All stages run even when one fails, so that one run reports everything; the summary fails
# if any did.
test: deps
	@$(MAKE) --no-print-directory all
	@rm -rf $(BUILD)/results
	@$(MAKE) --no-print-directory format-check || true
	@$(MAKE) --no-print-directory layers || true
	@$(MAKE) --no-print-directory unit || true
	@$(MAKE) --no-print-directory valgrind || true
	@$(MAKE) --no-print-directory fuzz || true
	@$(MAKE) --no-print-directory integration || true
	@$(MAKE) --no-print-directory summary

# As installed: a staged install under build/run (the resources, and the tools `make deps`
# fetched: py-spy and rbspy for the processes the built-in walkers do not support, the
# async-profiler jar that Java's auto mode takes), run from there.
run: deps
	@$(MAKE) --no-print-directory all
	@rm -rf $(BUILD)/run
	@$(MAKE) --no-print-directory install PREFIX="$(CURDIR)/$(BUILD)/run" DESTDIR= LOGDIR= >/dev/null
	@mkdir -p out
	@echo "./$(BUILD)/run/bin/polyprof -d 10 -o out"
	@./$(BUILD)/run/bin/polyprof -d 10 -o out
	@echo "profile written: $$(readlink -f out/last_profile.col)"

# ---- benchmarks (programs linked with the library) ----
BENCH_BIN := $(BUILD)/bench/bench_discovery $(BUILD)/bench/bench_pyreader $(BUILD)/bench/bench_jfr \
             $(BUILD)/bench/bench_merge
$(BUILD)/bench/bench_discovery: $(BUILD)/obj/bench/discovery/bench_discovery.o
$(BUILD)/bench/bench_merge: $(BUILD)/obj/bench/merge/bench_merge.o
$(BUILD)/bench/bench_pyreader: $(BUILD)/obj/bench/python/bench_reader.o
$(BUILD)/bench/bench_jfr: $(BUILD)/obj/bench/java/bench_jfr.o
$(BENCH_BIN): $(LIB)
	$(call say,LINK,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -o $@ $(filter %.o,$^) $(filter %.a,$^) $(LDLIBS)

bench: all
	bash bench/sampler/run.sh
	bash bench/discovery/run.sh
	bash bench/python/run.sh
	bash bench/java/run.sh
	bash bench/merge/run.sh
	bash bench/node/run.sh

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
