"""Estimated tokens, for budgets and reports: characters are the budget unit, tokens are shown beside them.

Pure. The providers record the real token usage of each call; this is only the estimate.
"""

import math


def _is_cjk(char: str) -> bool:
    code = ord(char)
    return (
        0x1100 <= code <= 0x11FF  # Hangul Jamo
        or 0x2E80 <= code <= 0x9FFF  # radicals, CJK punctuation, kana, Unified Ideographs and Extension A
        or 0xA960 <= code <= 0xA97F  # Hangul Jamo Extended-A
        or 0xAC00 <= code <= 0xD7FF  # Hangul syllables
        or 0xF900 <= code <= 0xFAFF  # Compatibility Ideographs
        or 0xFE30 <= code <= 0xFE4F  # CJK compatibility forms
        or 0xFF00 <= code <= 0xFFEF  # fullwidth and halfwidth forms
        or 0x20000 <= code <= 0x3FFFF  # Extensions B and later
    )


def estimate_tokens(text: str) -> int:
    """About 4 characters a token for English and other alphabetic text, about 1 a character for CJK."""
    if not text:
        return 0
    cjk = sum(1 for char in text if _is_cjk(char))
    return cjk + math.ceil((len(text) - cjk) / 4)
