"""Layout of the ``byte_vocab`` fixture (tests/conftest.py), importable by test modules.

A plain module rather than ``from conftest import ...``: several conftest.py files exist
under tests/, and importing one by name picks whichever was loaded first.
"""

BYTE_VOCAB_EXTRA = (b"ab", b"abc", b'{"', b'":', "é".encode(), b"\xe6", b"\x97\xa5")
BYTE_VOCAB_EOS = 256 + len(BYTE_VOCAB_EXTRA)
