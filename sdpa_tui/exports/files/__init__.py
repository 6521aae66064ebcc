"""Files written whole or not at all, checked before anything is measured, and read back."""
