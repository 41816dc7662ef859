# cdsl - build, test and install.
#
#   make            the tools (build/cdslc, build/cdslrun, build/cdsl-perf), libcdsl (static and shared) and
#                   build/api_example (examples/api_example.c, a user of cdsl.h)
#   make test       the whole suite: golden tests, the spec programs, the sanitizer builds, a
#                   bounded fuzz run; ends with "N passed, N failed, N skipped" (a test whose
#                   tool is missing, as packages.txt's optional group may be, is skipped)
#   make asan       the same binaries under AddressSanitizer + UBSan in build/asan/
#   make tsan       the same binaries under ThreadSanitizer in build/tsan/ (sim backend)
#   make fuzz       the libFuzzer targets in build/fuzz/ (clang): fuzz_parse (lex, parse,
#                   resolve), fuzz_check (through the checker and CUDA emission),
#                   fuzz_plan (the MSCCL++ plan importer, through the checker) and
#                   fuzz_verify (plan shapes through cdslrun's fill, sim run and check)
#   make wheel      build/dist/cdsl-<version>-py3-none-<platform>.whl: the Python package with
#                   libcdsl.so and the stdlib inside (pip install it offline; python/README.md)
#   make install PREFIX=/usr/local   tools, libcdsl, cdsl.h, the device headers (include/cdsl/),
#                   the stdlib, pkg-config and CMake files
#
# Generated C (re2c, Lemon) goes to build/gen/ and is never committed. Every variant build
# shares it. Header dependencies are tracked with -MMD.

RE2C   ?= re2c
LEMON  ?= lemon
LEMPAR ?= /usr/share/lemon/lempar.c
CC     ?= cc
PREFIX ?= /usr/local
B      ?= build
VERSION = 0.1.0
SOMAJOR = 0

WARN     = -Wall -Wextra -Wpedantic -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter
CFLAGS  ?= -O2 -g
XCFLAGS ?=
LDXFLAGS ?=
ALL_CFLAGS = -std=c11 $(WARN) $(CFLAGS) $(XCFLAGS) -fPIC -pthread -D_GNU_SOURCE \
             -DCDSL_VERSION='"$(VERSION)"' -DCDSL_STDLIB_DIR='"$(PREFIX)/share/cdsl/stdlib"' \
             $(INCLUDES) -Ibuild/gen -MMD -MP
LDLIBS   = -ljansson -ldl -lpthread -lm

# The sources live in folders by stage (docs/internals.md has the map): compiler/ (front, ir,
# check, lower, emit, plan, util) and runtime/ (api, engines, jit; device/ holds CUDA only).
# Every folder is on the include path, so a file names a header by its name alone; the
# objects mirror the folders under $(B)/obj/.
SRC_DIRS = compiler $(sort $(patsubst %/,%,$(wildcard compiler/*/))) runtime \
           $(filter-out runtime/device,$(sort $(patsubst %/,%,$(wildcard runtime/*/))))
INCLUDES = $(SRC_DIRS:%=-I%)

GEN      = build/gen
LIB_SRC  = $(sort $(foreach d,$(SRC_DIRS),$(wildcard $(d)/*.c)))
LIB_OBJ  = $(LIB_SRC:%.c=$(B)/obj/%.o) $(B)/obj/gen/lexer.o $(B)/obj/gen/parser.o $(B)/obj/gen/device_headers.o
TOOLS    = $(B)/cdslc $(B)/cdslrun $(B)/cdsl-perf

EXAMPLES = $(B)/api_example $(B)/rank_example

all: $(TOOLS) $(B)/libcdsl.a $(B)/libcdsl.so $(EXAMPLES)

# The shared library is versioned as shared libraries are: the file libcdsl.so.$(VERSION) with
# the SONAME libcdsl.so.$(SOMAJOR) (what a program linked against it asks the dynamic linker
# for), and the links libcdsl.so.$(SOMAJOR) and libcdsl.so (what -lcdsl and python/cdsl find).
# libcdsl.map exports exactly the functions of cdsl.h, with the symbol version CDSL_0.1:
# everything else is the library's own business (tests/api/exports.sh).
SONAME   = libcdsl.so.$(SOMAJOR)

$(GEN):
	@mkdir -p $@

# re2c: -W -Werror so that a rule that can never match, or an unhandled input, fails the build.
$(GEN)/lexer.c: grammar/lexer.re | $(GEN)
	$(RE2C) -W -Werror --no-generation-date --no-version -o $@ $<

# Lemon writes parser.c, parser.h and the parser.out report (kept for reading conflicts).
$(GEN)/parser.c $(GEN)/parser.h &: grammar/parser.y $(wildcard $(LEMPAR)) | $(GEN)
	cp grammar/parser.y $(GEN)/parser.y
	$(LEMON) -s -T$(LEMPAR) -d$(GEN) $(GEN)/parser.y

# Device code lives in real CUDA files: runtime/device/*.cuh (and runtime/abi.h, which host and
# device share) are embedded in libcdsl as C arrays; NVRTC receives them as named headers and
# cdslc --emit-cuda --standalone pastes them in. install puts them in include/cdsl/.
DEVICE_HEADERS = $(sort $(wildcard runtime/device/*.cuh)) runtime/abi.h

$(GEN)/device_headers.c: $(DEVICE_HEADERS) runtime/device/embed.sh | $(GEN)
	sh runtime/device/embed.sh $@ $(DEVICE_HEADERS)

$(B)/obj/gen/device_headers.o: $(GEN)/device_headers.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(B)/obj/gen/lexer.o: $(GEN)/lexer.c $(GEN)/parser.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# Lemon's template trips -Wextra on unused locals; those two warnings only, this file only.
$(B)/obj/gen/parser.o: $(GEN)/parser.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Wno-unused-variable -Wno-unused-parameter -DNDEBUG -c -o $@ $<

$(B)/obj/%.o: %.c | $(GEN)/parser.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(B)/libcdsl.a: $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(B)/libcdsl.so.$(VERSION): $(LIB_OBJ) libcdsl.map
	$(CC) -shared $(CFLAGS) $(XCFLAGS) $(LDXFLAGS) -Wl,-soname,$(SONAME) -Wl,--version-script,libcdsl.map \
		-o $@ $(LIB_OBJ) $(LDLIBS)

$(B)/libcdsl.so: $(B)/libcdsl.so.$(VERSION)
	ln -sf libcdsl.so.$(VERSION) $(B)/$(SONAME)
	ln -sf $(SONAME) $@

$(B)/%: $(B)/obj/tools/%.o $(B)/libcdsl.a
	$(CC) $(CFLAGS) $(XCFLAGS) $(LDXFLAGS) -o $@ $< $(B)/libcdsl.a $(LDLIBS)

# cdsl-perf: nccl-tests' flags and output (cdsl-perf.c), results files (perf_files.c, jansson),
# one process per rank under mpirun or torchrun (perf_launch.c, perf_rank.c).
$(B)/cdsl-perf: $(B)/obj/tools/cdsl-perf.o $(B)/obj/tools/perf_files.o $(B)/obj/tools/perf_launch.o \
		$(B)/obj/tools/perf_rank.o $(B)/libcdsl.a
	$(CC) $(CFLAGS) $(XCFLAGS) $(LDXFLAGS) -o $@ $(filter %.o,$^) $(B)/libcdsl.a $(LDLIBS)

# examples/api_example.c: a program of the user's own, linked like one (cdsl.h and the library).
$(B)/api_example: $(B)/obj/examples/api_example.o $(B)/libcdsl.a
	$(CC) $(CFLAGS) $(XCFLAGS) $(LDXFLAGS) -o $@ $< $(B)/libcdsl.a $(LDLIBS)

# examples/rank_example.c, one process per rank: without MPI (examples/rank_launch.sh starts
# it), and with MPI where mpicc is (make rank_example_mpi; mpirun -n 2 build/rank_example_mpi).
$(B)/rank_example: $(B)/obj/examples/rank_example.o $(B)/libcdsl.a
	$(CC) $(CFLAGS) $(XCFLAGS) $(LDXFLAGS) -o $@ $< $(B)/libcdsl.a $(LDLIBS)

MPICC ?= mpicc
rank_example_mpi: $(B)/rank_example_mpi
$(B)/rank_example_mpi: examples/rank_example.c $(B)/libcdsl.a
	$(MPICC) -std=c11 -O2 -g -D_GNU_SOURCE -DCDSL_WITH_MPI -Iruntime -o $@ $< $(B)/libcdsl.a $(LDLIBS)

# make wheel: build/dist/cdsl-$(VERSION)-py3-none-<platform>.whl, the Python package with
# libcdsl.so and the stdlib inside it, written by python/build_backend/cdsl_build.py with the
# standard library only (no network, no setuptools); pip install it anywhere, offline.
PYTHON ?= python3
wheel: $(B)/libcdsl.so
	$(PYTHON) python/build_backend/cdsl_build.py --lib $(B)/libcdsl.so --stdlib stdlib --out $(B)/dist

# The variant builds share build/gen: make it first, so that parallel sub-makes never run
# re2c or lemon at the same time.
asan: $(GEN)/parser.h $(GEN)/lexer.c $(GEN)/device_headers.c
	$(MAKE) B=build/asan XCFLAGS="-O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
		LDXFLAGS="-fsanitize=address,undefined" build/asan/cdslc build/asan/cdslrun build/asan/cdsl-perf build/asan/api_example

tsan: $(GEN)/parser.h $(GEN)/lexer.c $(GEN)/device_headers.c
	$(MAKE) B=build/tsan XCFLAGS="-O1 -fsanitize=thread" LDXFLAGS="-fsanitize=thread" build/tsan/cdslc build/tsan/cdslrun

# First a tiny fuzz target is built and run (tests/lib/need.bash), so that a missing clang
# or fuzzer runtime is one line naming the Debian package, not a wall of link errors.
FUZZ_CC ?= clang
fuzz: $(GEN)/parser.h $(GEN)/lexer.c $(GEN)/device_headers.c
	@why=$$(FUZZ_CC=$(FUZZ_CC) bash -c '. tests/lib/need.bash && need_fuzzer "make fuzz"') || \
		{ echo "$${why#\[SKIP\] }" >&2; exit 1; }
	$(MAKE) B=build/fuzz CC=$(FUZZ_CC) XCFLAGS="-O1 -fsanitize=fuzzer-no-link,address,undefined" build/fuzz/libcdsl.a
	for t in fuzz_parse fuzz_check fuzz_plan fuzz_verify; do \
		$(FUZZ_CC) -std=c11 -O1 -g -fsanitize=fuzzer,address,undefined $(INCLUDES) -Ibuild/gen \
			-o build/fuzz/$$t tests/fuzz/$$t.c build/fuzz/libcdsl.a $(LDLIBS) || exit 1; \
	done

test: all asan tsan
	@bash tests/run.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include \
		$(DESTDIR)$(PREFIX)/share/cdsl/stdlib $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/lib/cmake/cdsl
	install -m 755 $(TOOLS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(B)/libcdsl.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(B)/libcdsl.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libcdsl.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(PREFIX)/lib/libcdsl.so
	install -m 644 runtime/cdsl.h $(DESTDIR)$(PREFIX)/include/
	install -d $(DESTDIR)$(PREFIX)/include/cdsl
	install -m 644 $(DEVICE_HEADERS) $(DESTDIR)$(PREFIX)/include/cdsl/
	install -m 644 stdlib/*.cdsl $(DESTDIR)$(PREFIX)/share/cdsl/stdlib/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' cdsl.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/cdsl.pc
	for f in cdslConfig cdslConfigVersion; do \
		sed -e 's|@VERSION@|$(VERSION)|g' -e 's|@SOMAJOR@|$(SOMAJOR)|g' cmake/$$f.cmake.in \
			> $(DESTDIR)$(PREFIX)/lib/cmake/cdsl/$$f.cmake || exit 1; \
	done

clean:
	rm -rf build

# The include flags, for the test scripts that compile sources or link against the objects.
include-flags:
	@echo $(INCLUDES) -Ibuild/gen

.PHONY: all asan tsan fuzz test install clean rank_example_mpi include-flags wheel
.SECONDARY:

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)
