"""After the program exits: each signature's alternatives measured in the lab's engine and the cost children
(``advise.py``, its progress on stderr in ``advice_progress.py``), and the calls flagged by the gradient check
replayed through every backend (``replay_client.py``)."""
