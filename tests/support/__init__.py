"""What the tests share: fakes of the engine, the UI's feeds and NVML, real recorded data, waits with a deadline, the
runs of real programs and engines that several test files make, and where the tests' files are (``paths``)."""
