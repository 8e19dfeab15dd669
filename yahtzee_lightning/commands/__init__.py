"""The verbs of ``yahtzee-lightning``: one module per verb or family, each a thin layer of argument
parsing and printing over library functions.

This is the top floor: it may import any folder of the package, and none imports it (the layers
test holds this). A verb imports its heavy parts (torch, TorchRL, Lightning, the solver) only
after its arguments parse, so that ``--help`` and a usage error answer at once.
"""
