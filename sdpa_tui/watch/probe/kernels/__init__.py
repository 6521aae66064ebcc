"""Each call's kernels and kernel time, from short profiler windows inside the watched program."""
