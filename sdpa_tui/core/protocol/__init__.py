"""What crosses between the UI and the measuring engine: the commands, the records, their wire format, and the
``EngineHandle`` the UI holds."""
