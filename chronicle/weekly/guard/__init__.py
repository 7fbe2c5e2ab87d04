"""Guard v2 of the weekly chronicle: the sentence-level checks behind `chronicle.weekly.faithfulness`.

`text` splits a report into sentences with their citations and normalises text for comparison; `names`
finds what a sentence names (subject ids, sites, people, dates, drug and lot numbers, numbers with units);
`events` finds event types a sentence asserts or denies. All pure, deterministic and offline.
"""
