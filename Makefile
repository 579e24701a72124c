# A thin wrapper over CMake: the build itself lives in CMakeLists.txt.
BUILD ?= build
JOBS ?= 2

.PHONY: all deps test demo bench slurm clean
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

# sbatch the job on a Slurm cluster: make slurm JOB=configs/fashion-mlp.yaml ARGS="train.epochs=2"
JOB ?= configs/fashion-mlp.yaml
slurm: all
	sbatch scripts/slurm/train.sbatch $(JOB) $(ARGS)

clean:
	rm -rf $(BUILD)
