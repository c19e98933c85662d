"""Small talk: a statement that holds no fact about the user ("Thanks!", "hello, what's up",
"Can you tell me your name?"), which remember does not store from an inferred message.

See docs/ARCHITECTURE.md, "Which memory is current". Pure functions over text.

The rule: a statement is small talk when every word that carries meaning in it is a word of
greeting, thanks, leave-taking, assent or praise (the lexicon below), or when it speaks to the
assistant ("you", "your") and says nothing of the user's own (no "I", "my", "we", no name,
number or date), or when it asks the assistant something without a word of the user's own.
Anything else is kept: when in doubt, a statement is a fact.
"""

from __future__ import annotations

import re

from memory_console.agent.rules import facts
from memory_console.agent.rules.statements import sentences

# Words of greeting, thanks, leave-taking, assent, praise and filler: a statement made of these
# (and words that join) states nothing.
PHATIC = frozenset(
    """
    hi hello hey heya hiya howdy hola yo greetings morning afternoon evening night day
    thanks thank thx ty cheers appreciate appreciated appreciating apprecaite appeciate
    grateful gratitude help helped helping helpful assistance cooperation response info
    answer answers advice bye goodbye farewell later see soon ya ciao take care
    ok okay k kk yes yeah yep yup yea no nope nah maybe perhaps sure alright right fine
    great good nice cool awesome wonderful lovely perfect excellent amazing fantastic
    brilliant super wow lol haha hahaha hmm hm oh ah uh um well please sorry welcome glad
    pleased meet meeting nice happy
    how what whats what's up going doing things been everything feeling alright ok
    much so very lot lots again all really indeed too tons million bunch
    buddy friend mate pal doll dear sir madam siri ai bot assistant
    special owe one same back chat chatting talk talking again actually news guess some wake
    companion try check out give advice suggestion suggestions recommendation recommendations
    idea ideas useful interesting enjoyable practical sound sounds seem seems agree correct
    true absolutely definitely exactly certainly totally
    """.split()
)
# Words that join or point: they neither make nor unmake small talk.
_LIGHT = frozenset(
    """
    a an the and or but of to for with in on at by from as that this it it's its is are
    am was were be been being do does did have has had will would can could should shall
    may might must there here just that's you you're youre your yours u ya ur me i i'm
    we about let's lets them they those these i'll i've i'd
    """.split()
)
_FIRST_PERSON = frozenset("i i'm i've i'd i'll me my mine myself we we're our ours us".split())
_SECOND_PERSON = frozenset("you you're youre your yours yourself u ur ya".split())
# An imperative or a question word that opens a request to the assistant ("Tell me a joke.",
# "Suggest dinner options in San Francisco.", "What's the capital of France").
ASKING = re.compile(
    r"(?i)^\s*(?:(?:please|so|ok|okay|hey|now),?\s+)?(?:tell|give|share|suggest|recommend|define|"
    r"explain|show|find|play|list|name|describe|write|translate|search|look\s+up|"
    r"what|what's|whats|who|who's|where|where's|when|why|how|which|can|could|would|will|"
    r"do|does|did|is|are)\b"
)
WANTS_TO_KNOW = re.compile(
    r"(?i)^\s*(?:(?:hey|so|ok|okay|um),?\s+)?i\s+(?:need|want|would\s+like|'d\s+like)\s+"
    r"(?:to\s+(?:know|hear|ask)|you\s+to\s+tell)\b|^\s*i\s+wonder\b"
)
_WORD = re.compile(r"[a-z0-9][a-z0-9'’]*", re.IGNORECASE)


def is_chatter(statement: str) -> bool:
    """Whether a statement holds no fact about the user: each of its sentences is small talk
    (see the module's rule)."""
    return all(_small_talk(sentence) for sentence in sentences(statement.strip()) or [""])


def _small_talk(sentence: str) -> bool:
    text = sentence.strip()
    if not text:
        return True
    words = [w.replace("’", "'") for w in _WORD.findall(text.casefold())]
    if not words:
        return True
    content = [w for w in words if w not in _LIGHT]
    if all(w in PHATIC for w in content):
        return True
    own = any(w in _FIRST_PERSON and w != "me" for w in words)
    asks = text.endswith("?") or ASKING.match(text) is not None
    if asks and not own:
        return True  # asks the assistant something, with nothing of the user's own
    if WANTS_TO_KNOW.match(text):
        return True  # "i need to know whether you are a human": a question put as a want
    if own or facts.numbers(text) or facts.dates(text) or facts.entities(text):
        return False
    return any(w in _SECOND_PERSON for w in words)  # said to the assistant, nothing of the user's
