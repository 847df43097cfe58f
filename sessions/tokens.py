"""Estimated tokens, for budgets and reports: characters are the budget unit, tokens are shown beside them.

Pure. The providers record the real token usage of each call; this is only the estimate.
"""

import math
import re


# Hangul Jamo; radicals, CJK punctuation, kana, Unified Ideographs and Extension A; Hangul
# Jamo Extended-A; Hangul syllables; Compatibility Ideographs; CJK compatibility forms;
# fullwidth and halfwidth forms; Extensions B and later. One regex: counting in C, not per character in Python.
_CJK = re.compile(
    "[\u1100-\u11ff\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef"
    "\U00020000-\U0003ffff]"
)


def estimate_tokens(text: str) -> int:
    """About 4 characters a token for English and other alphabetic text, about 1 a character for CJK."""
    if not text:
        return 0
    cjk = len(_CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)
