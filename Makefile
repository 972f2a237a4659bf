# polyprof build. `make` builds build/polyprof; `make test` installs deps, builds and runs every
# test stage; `make run` profiles the host for 10 s into ./out; `make install` installs the
# binary and its resources (PREFIX, DESTDIR). `make V=1` shows the commands.
CC       := gcc
CLANG    := clang
BPFTOOL  := bpftool
BUILD    := build

# A step is one recipe line, `$(Q)$(call say,WHAT,TARGET)command` (the short line is printed by
# the same shell as the command), so that `make -n | wc -l` counts commands.
ifeq ($(V),1)
Q        :=
say      :=
else
Q        := @
say       = printf '  %-6s %s\n' $(1) $(2);
endif

WARN     := -Wall -Wextra -Werror -Wno-missing-field-initializers
CFLAGS   := -std=gnu11 -O2 -g $(WARN) -fno-omit-frame-pointer -D_GNU_SOURCE -I. -I$(BUILD)
DEPFLAGS  = -MMD -MP -MF $(@:.o=.d)
LDLIBS   := -lbpf -ldw -lelf -lz -llzma -ljansson -lpcre2-8 -larchive -ldl -lpthread -liberty -lm -lwebsockets -lprotobuf-c -lsqlite3
SAN      := -fsanitize=address,undefined -fno-sanitize-recover=undefined
# UBSan findings abort (a fuzz input that only printed a report passed the stage)
FUZZSAN  := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined

LIB_SRC  := $(sort $(wildcard base/*.c orchestrator/*.c merge/*.c runtimes/*.c runtimes/*/*.c))
LIB_SRC  := $(filter-out orchestrator/main.c,$(LIB_SRC))
BPF_SRC  := $(wildcard bpf/*.bpf.c)
SKELS    := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRC))
# Generated headers: the BPF skeletons, the flame graph page (merge/html.c) and the list of
# in-sampler walkers (bpf/sampler.h, bpf/walkers.bpf.h).
WALKERS_GEN := $(BUILD)/walkers_gen.h $(BUILD)/walkers_gen.bpf.h
# The pprof export's protobuf code (merge/pprof.proto, compiled in by merge/pprof_pb.c).
PB_GEN   := $(BUILD)/pprof.pb-c.h $(BUILD)/pprof.pb-c.c
GEN_HDRS := $(SKELS) $(BUILD)/flamegraph_template.h $(WALKERS_GEN) $(PB_GEN)

# The library is compiled once per flavour: plain (the binary, the benchmarks, the valgrind
# tests), sanitized (unit tests), fuzz (clang, the fuzz targets). The binary and the benchmarks
# link the static archive of the plain objects; the tests and fuzz targets link a shared library
# of their flavour (objects are position-independent), found through their rpath ($ORIGIN), and
# depend on it order-only: a changed library file recompiles its objects and relinks the
# archive, the binary and the three shared libraries, not the ~95 test binaries (a changed
# interface changes a header, which recompiles and relinks the tests that include it).
PIC      := -fPIC -fno-semantic-interposition
OBJ      := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRC))
SAN_OBJ  := $(patsubst %.c,$(BUILD)/san/%.o,$(LIB_SRC))
FUZZ_OBJ := $(patsubst %.c,$(BUILD)/fuzzobj/%.o,$(LIB_SRC))
LIB      := $(BUILD)/libpolyprof.a
SO       := $(BUILD)/libpolyprof.so
SAN_SO   := $(BUILD)/libpolyprof-san.so
FUZZ_SO  := $(BUILD)/libpolyprof-fuzz.so

# The flags every object and test binary is built with, recorded in build/flags.txt (rewritten,
# when make reads this file, only if they changed): objects and links depend on it, so a change
# of flags (or of how tests link: "link=so") rebuilds them instead of mixing old and new objects.
FLAGS_ID := link=so $(CC) $(CFLAGS) $(PIC) $(SAN) $(FUZZSAN) $(LDLIBS)
FLAGS    := $(BUILD)/flags.txt
$(shell mkdir -p $(BUILD) && { echo '$(FLAGS_ID)' | cmp -s - $(FLAGS) || echo '$(FLAGS_ID)' > $(FLAGS); })

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
UNIT_VG  := $(patsubst tests/unit/%.c,$(BUILD)/tests/vg/%,$(UNIT_SRC))
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRC))

.PHONY: all deps run test unit valgrind integration fuzz summary bench format format-check layers \
        clean install mutants tools image
# Quiet unless V=1: no "is up to date" line per goal either, so that `make -n <goals> | wc -l`
# counts the commands that would run.
ifneq ($(V),1)
.SILENT:
endif
# Keep the object files of pattern rules (Make would delete them as intermediates).
.SECONDARY:
# A recipe that fails leaves no half-written target behind.
.DELETE_ON_ERROR:

all: $(BUILD)/polyprof tools

# ---- dependencies (Debian packages; idempotent and quiet when present) ----
DEB_PKGS := gcc make clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev liblzma-dev \
            libprotobuf-c-dev protobuf-c-compiler libjansson-dev libsqlite3-dev libpcre2-dev libcurl4-openssl-dev libiberty-dev libcriterion-dev libarchive-dev \
            libclang-rt-14-dev libdw-dev valgrind python3 python3-pip python3-pytest python3-pytest-timeout \
            golang-go linux-perf stress-ng clang-format ruby php-cli php8.2-fpm \
            openjdk-17-jdk-headless mono-mcs \
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
	$(Q)$(call say,INST,$(DESTDIR)$(PREFIX))install -D -m 0755 $(BUILD)/polyprof $(DESTDIR)$(PREFIX)/bin/polyprof
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

$(BUILD)/%.bpf.o: bpf/%.bpf.c | $(BUILD) $(WALKERS_GEN)
	$(Q)$(call say,BPF,$<)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -Wall -Werror -I. -I$(BUILD) \
	    -MMD -MP -MF $(@:.o=.d) -c $< -o $@
	$(Q)llvm-strip -g $@ 2>/dev/null || true

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(Q)$(call say,SKEL,$@)$(BPFTOOL) gen skeleton $< name $*_bpf > $@.tmp && mv $@.tmp $@

$(BUILD):
	@mkdir -p $@

# The in-sampler walkers, from the registry: each runtime of PP_RUNTIME_LIST (in its order) whose
# folder has walker.bpf.h (its walker pp_walk_<symbol>, per-process data in walker_info.h) gets
# walker index PP_WALK_<ID>. walkers_gen.h: PP_WALKER_LIST(X), for the BPF program and user
# space; walkers_gen.bpf.h: the walkers' includes, for the BPF program only.
WALKER_SRC := $(wildcard runtimes/*/walker.bpf.h)
$(WALKERS_GEN) &: runtimes/registry.h $(WALKER_SRC) | $(BUILD)
	$(Q)$(call say,GEN,$(BUILD)/walkers_gen.h)rows=$$(printf '#include "runtimes/registry.h"\n#define PP_ROW_(id, sym) @row id sym\nPP_RUNTIME_LIST(PP_ROW_)\n' \
	    | $(CC) -E -P -I. -x c - | tr '@' '\n' | sed -n 's/^row \([A-Z0-9_]*\) \([a-z0-9_]*\).*/\1 \2/p') && \
	[ -n "$$rows" ] || { echo "walkers: no runtime in PP_RUNTIME_LIST of runtimes/registry.h" >&2; exit 1; }; \
	{ echo '/* Generated by the Makefile from runtimes/registry.h: do not edit. */'; \
	  echo '#define PP_WALKER_LIST(X) \'; \
	  echo "$$rows" | while read -r id sym; do [ -f runtimes/$$sym/walker.bpf.h ] && echo "    X($$id, $$sym) \\"; done; \
	  echo '    /* end */'; } > $(BUILD)/walkers_gen.h.tmp && \
	{ echo '/* Generated by the Makefile from runtimes/registry.h: do not edit. */'; \
	  echo "$$rows" | while read -r id sym; do [ -f runtimes/$$sym/walker.bpf.h ] && \
	      echo "#include \"runtimes/$$sym/walker.bpf.h\""; done; true; } > $(BUILD)/walkers_gen.bpf.h.tmp && \
	mv $(BUILD)/walkers_gen.h.tmp $(BUILD)/walkers_gen.h && mv $(BUILD)/walkers_gen.bpf.h.tmp $(BUILD)/walkers_gen.bpf.h

# The flame graph page, compiled in as a NUL-terminated char array (merge/html.c).
$(BUILD)/flamegraph_template.h: resources/flamegraph/flamegraph.html | $(BUILD)
	$(Q)$(call say,GEN,$@){ echo 'static const char pp_flamegraph_template[] = {'; \
	    od -An -v -tx1 $< | sed -e 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'; echo '0};'; } > $@.tmp && \
	    mv $@.tmp $@

# The pprof export's protobuf code, from our subset of pprof's profile.proto (not committed).
$(PB_GEN) &: merge/pprof.proto | $(BUILD)
	$(Q)$(call say,PROTOC,$<)protoc-c -Imerge --c_out=$(BUILD) $<

# ---- C objects: header dependencies come from the compiler (-MMD); the generated headers are
# built before any object (order-only), and only objects that include one depend on it. ----
$(BUILD)/obj/%.o: %.c $(FLAGS) | $(GEN_HDRS)
	$(Q)$(call say,CC,$<)mkdir -p $(dir $@) && $(CC) $(CFLAGS) $(PIC) $(DEPFLAGS) -c $< -o $@

$(BUILD)/san/%.o: %.c $(FLAGS) | $(GEN_HDRS)
	$(Q)$(call say,CC-SAN,$<)mkdir -p $(dir $@) && $(CC) $(CFLAGS) $(PIC) -O1 $(SAN) $(DEPFLAGS) -c $< -o $@

$(BUILD)/fuzzobj/%.o: %.c $(FLAGS) | $(GEN_HDRS)
	$(Q)$(call say,CC-FUZ,$<)mkdir -p $(dir $@) && $(CLANG) -std=gnu11 -g -O1 $(WARN) -D_GNU_SOURCE -I. -I$(BUILD) $(PIC) $(FUZZSAN) $(DEPFLAGS) -c $< -o $@

$(LIB): $(OBJ)
	$(Q)$(call say,AR,$@)rm -f $@ && ar rcs $@ $^

$(SO): $(OBJ)
	$(Q)$(call say,SO,$@)$(CC) -shared -o $@ $^ $(LDLIBS)

$(SAN_SO): $(SAN_OBJ)
	$(Q)$(call say,SO,$@)$(CC) -shared $(SAN) -o $@ $^ $(LDLIBS)

$(FUZZ_SO): $(FUZZ_OBJ)
	$(Q)$(call say,SO,$@)$(CLANG) -shared -fsanitize=address,undefined -o $@ $^ $(LDLIBS)

$(BUILD)/polyprof: $(BUILD)/obj/orchestrator/main.o $(LIB)
	$(Q)$(call say,LINK,$@)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# ---- tests: linked with their flavour's shared library (order-only, see above) ----
SAN_SO_LINK  = -L$(BUILD) -l:$(notdir $(SAN_SO)) -Wl,-rpath,'$$ORIGIN/..'
SO_LINK      = -L$(BUILD) -l:$(notdir $(SO)) -Wl,-rpath,'$$ORIGIN/../..'
FUZZ_SO_LINK = -L$(BUILD) -l:$(notdir $(FUZZ_SO)) -Wl,-rpath,'$$ORIGIN/..'
$(BUILD)/tests/%: $(BUILD)/san/tests/unit/%.o $(FLAGS) | $(SAN_SO)
	$(Q)$(call say,LINK,$@)mkdir -p $(dir $@) && $(CC) $(CFLAGS) -O1 $(SAN) -o $@ $< $(SAN_SO_LINK) $(LDLIBS) -lcriterion

$(BUILD)/tests/vg/%: $(BUILD)/obj/tests/unit/%.o $(FLAGS) | $(SO)
	$(Q)$(call say,LINK,$@)mkdir -p $(dir $@) && $(CC) $(CFLAGS) -o $@ $< $(SO_LINK) $(LDLIBS) -lcriterion

$(BUILD)/fuzz/%: $(BUILD)/fuzzobj/tests/fuzz/%.o $(FLAGS) | $(FUZZ_SO)
	$(Q)$(call say,LINK,$@)mkdir -p $(dir $@) && $(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -o $@ $< $(FUZZ_SO_LINK) $(LDLIBS)

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

# Mutation testing (not part of `make test`): each mutation of tests/tools/mutants.json planted in
# a scratch copy, its narrowest stage run; prints the kill rate and the survivors.
# MUTANTS_ARGS: e.g. --only ID,ID or --stage-prefix unit (tests/tools/mutants.py --help).
mutants:
	@python3 tests/tools/mutants.py $(MUTANTS_ARGS)

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
             $(BUILD)/bench/bench_merge $(BUILD)/bench/bench_cfi $(BUILD)/bench/bench_filecache \
             $(BUILD)/bench/bench_history
$(BUILD)/bench/bench_history: $(BUILD)/obj/bench/history/bench_history.o
$(BUILD)/bench/bench_cfi: $(BUILD)/obj/bench/unwind/bench_cfi.o
$(BUILD)/bench/bench_filecache: $(BUILD)/obj/bench/unwind/bench_filecache.o
$(BUILD)/bench/bench_discovery: $(BUILD)/obj/bench/discovery/bench_discovery.o
$(BUILD)/bench/bench_merge: $(BUILD)/obj/bench/merge/bench_merge.o
$(BUILD)/bench/bench_pyreader: $(BUILD)/obj/bench/python/bench_reader.o
$(BUILD)/bench/bench_jfr: $(BUILD)/obj/bench/java/bench_jfr.o
$(BENCH_BIN): $(LIB)
	$(Q)$(call say,LINK,$@)mkdir -p $(dir $@) && $(CC) $(CFLAGS) -o $@ $(filter %.o,$^) $(filter %.a,$^) $(LDLIBS)

bench: all
	bash bench/sampler/run.sh
	bash bench/discovery/run.sh
	bash bench/python/run.sh
	bash bench/java/run.sh
	bash bench/merge/run.sh
	bash bench/node/run.sh
	bash bench/history/run.sh

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
