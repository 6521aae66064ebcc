"""What runs inside the watched program (imports torch): the way in (bootstrap, start-up hook, install), the
wrapper's fast and slow paths, and calls that pass around the wrapper (compiled graphs, TorchScript, C++ paths)."""
