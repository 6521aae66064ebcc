"""The watched processes' states: the socket each probe sends them on (``state_socket.py``), each process's latest
kept and the report built from them (``collected_states.py``), and the calls made while the host was busy beyond the
program marked as they arrive (``contention.py``)."""
