# A thin wrapper over CMake: the build itself lives in CMakeLists.txt.
BUILD ?= build
JOBS ?= 2

.PHONY: all deps test demo bench clean
all:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

deps:
	scripts/install-deps.sh

test: deps all
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) --timeout 300

demo: deps all
	scripts/demo.sh

bench: all
	bench/run.sh  # installs the PyTorch peers itself

clean:
	rm -rf $(BUILD)
