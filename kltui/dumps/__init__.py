"""Dumper drill-down: read the `.pt` files SGLang's dumper (`sglang.srt.debug_utils.dumper`, non
intrusive mode `all`) writes, align decode step k with the fresh prefill's row at the same
position, and name the first module whose inputs are bit-identical and whose output differs.

    files.py     folder index and lazy, safe loading of the dumper's files
    passes.py    forward passes: positions, request ids, module entries in execution order
    compare.py   bit equality and max |diff| of aligned rows
    analyze.py   the analysis (decode vs fresh prefill, prompt prefill M-invariance)
    modules.py   one pass module by module (the table the analysis reports)
    render.py    the printed table
    capture.py   driving a live server: dumper HTTP control, the three passes
    cli.py       `kltui dumps` argument parsing and exit codes

torch is imported only here, and only when a command of this package runs.
"""
