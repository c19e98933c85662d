"""Harnesses the tests and the benchmarks share: a crash child process, a live agent, the
labelled dialogues' replay and the search-quality evaluation. The tests run them at a small
size and assert on what they return; the scripts under benchmarks/ run them at full size and
print the figures. Nothing here imports the benchmarks."""
