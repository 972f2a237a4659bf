# polyprof build. `make` builds build/polyprof; `make test` installs deps, builds and runs every
# test; `make run` profiles the host for 10 s into ./out.
CC       := gcc
CLANG    := clang
BPFTOOL  := bpftool
BUILD    := build

WARN     := -Wall -Wextra -Werror -Wno-missing-field-initializers
CFLAGS   := -std=gnu11 -O2 -g $(WARN) -fno-omit-frame-pointer -D_GNU_SOURCE -I. -I$(BUILD)
LDLIBS   := -lbpf -lelf -lz -llzma -ljansson -lpcre2-8 -ldl -lpthread -liberty -lm
SAN      := -fsanitize=address,undefined -fno-sanitize-recover=undefined

LIB_SRC  := $(sort $(wildcard orchestrator/*.c merge/*.c runtimes/*.c runtimes/*/*.c))
LIB_SRC  := $(filter-out orchestrator/main.c,$(LIB_SRC))
HDRS     := $(wildcard orchestrator/*.h merge/*.h runtimes/*.h runtimes/*/*.h bpf/*.h)
BPF_SRC  := $(wildcard bpf/*.bpf.c)
SKELS    := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRC))

OBJ      := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRC))
SAN_OBJ  := $(patsubst %.c,$(BUILD)/san/%.o,$(LIB_SRC))
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
UNIT_VG  := $(patsubst tests/unit/%.c,$(BUILD)/tests/vg/%,$(UNIT_SRC))
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRC))

.PHONY: all deps run test unit valgrind integration fuzz bench format clean
# Keep the object files of pattern rules (Make would delete them as intermediates).
.SECONDARY:

all: $(BUILD)/polyprof

# ---- dependencies (Debian packages; idempotent and quiet when present) ----
DEB_PKGS := gcc make clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev liblzma-dev \
            libjansson-dev libpcre2-dev libcurl4-openssl-dev libiberty-dev libcriterion-dev \
            libclang-rt-14-dev valgrind python3 python3-pytest golang-go linux-perf stress-ng \
            clang-format ruby php-cli openjdk-17-jdk-headless nodejs
deps:
	@missing=$$(for p in $(DEB_PKGS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
	    | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	    echo "installing: $$missing"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) \
	        >/tmp/polyprof-deps.log 2>&1 || { cat /tmp/polyprof-deps.log; exit 1; }; \
	fi

# ---- BPF: CO-RE objects and libbpf skeletons ----
$(BUILD)/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) | $(BUILD)
	$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall -Werror -I. -c $< -o $@
	llvm-strip -g $@ 2>/dev/null || true

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $*_bpf > $@.tmp && mv $@.tmp $@

$(BUILD):
	@mkdir -p $@

# ---- C objects ----
$(BUILD)/obj/%.o: %.c $(HDRS) $(SKELS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/san/%.o: %.c $(HDRS) $(SKELS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -O1 $(SAN) -c $< -o $@

$(BUILD)/polyprof: $(BUILD)/obj/orchestrator/main.o $(OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# ---- tests ----
$(BUILD)/tests/%: tests/unit/%.c $(SAN_OBJ) tests/unit/testutil.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -O1 $(SAN) -o $@ $< $(SAN_OBJ) $(LDLIBS) -lcriterion

$(BUILD)/tests/vg/%: tests/unit/%.c $(OBJ) tests/unit/testutil.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(OBJ) $(LDLIBS) -lcriterion

$(BUILD)/fuzz/%: tests/fuzz/%.c $(LIB_SRC) $(HDRS) $(SKELS)
	@mkdir -p $(dir $@)
	$(CLANG) -std=gnu11 -g -O1 -D_GNU_SOURCE -I. -I$(BUILD) -fsanitize=fuzzer,address,undefined \
	    -o $@ $< $(LIB_SRC) $(LDLIBS)


unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; ASAN_OPTIONS=detect_leaks=1 $$t; done

valgrind: $(UNIT_VG)
	@set -e; for t in $(UNIT_VG); do echo "== valgrind $$t"; \
	    valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=9 \
	        --trace-children=yes --trace-children-skip='/usr/*,/bin/*,/tmp/*,/root/*,/sbin/*' $$t --jobs=1 >/dev/null 2>$(BUILD)/vg.log \
	        || { cat $(BUILD)/vg.log; exit 1; }; done; echo "valgrind: no leaks"

fuzz: $(FUZZ_BIN)
	@set -e; for f in $(FUZZ_BIN); do n=$$(basename $$f); echo "== $$n (smoke, 20 s)"; \
	    mkdir -p $(BUILD)/corpus/$$n; \
	    $$f -max_total_time=20 -print_final_stats=0 $(BUILD)/corpus/$$n \
	        $$( [ -d tests/fuzz/corpus/$$n ] && echo tests/fuzz/corpus/$$n ) 2>$(BUILD)/$$n.log \
	        || { tail -50 $(BUILD)/$$n.log; exit 1; }; done

integration: $(BUILD)/polyprof
	cd tests/integration && /usr/bin/python3 -m pytest -q -p no:cacheprovider .

test: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory valgrind
	@$(MAKE) --no-print-directory fuzz
	@$(MAKE) --no-print-directory integration

run: deps
	@$(MAKE) --no-print-directory all
	@mkdir -p out
	./$(BUILD)/polyprof -d 10 -o out
	@echo "profile written: $$(readlink -f out/last_profile.col)"

# ---- benchmarks (programs linked with the library objects) ----
BENCH_BIN := $(BUILD)/bench/bench_discovery $(BUILD)/bench/bench_pyreader $(BUILD)/bench/bench_jfr
$(BUILD)/bench/bench_discovery: bench/discovery/bench_discovery.c
$(BUILD)/bench/bench_pyreader: bench/python/bench_reader.c
$(BUILD)/bench/bench_jfr: bench/java/bench_jfr.c
$(BENCH_BIN): $(OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $(filter %.c,$^) $(OBJ) $(LDLIBS)

bench: all
	bash bench/sampler/run.sh
	bash bench/discovery/run.sh
	bash bench/python/run.sh
	bash bench/java/run.sh

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD)
