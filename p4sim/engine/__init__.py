"""The execution engine: compiles a checked P4 program to Python once, at load.

Example::

    >>> from p4sim.engine import load_program
"""
from p4sim.engine.program import CompiledProgram, ProgramState, load_program, load_program_text

__all__ = ["CompiledProgram", "ProgramState", "load_program", "load_program_text"]
