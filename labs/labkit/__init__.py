"""The labs framework (issue 8): the checker's :class:`Report`, the lab switch
(:class:`LabSwitch`: a P4 program on p4sim or BMv2 with veth ports), lab discovery and
the command line ``python -m labs.labkit list|run|check``.

Example (inside a lab's ``lab.py``)::

    from labs.labkit import LabSwitch, Report

    def check(files_dir, target):
        r = Report(TITLE)
        with LabSwitch(files_dir / "ecmp.p4", lab="01-ecmp-hashing", ports=[1, 2],
                       target=target) as sw:
            sw.send(1, frame)
            r.expect(sw.receive(2, timeout_s=1.0) is not None, "the packet left on port 2")
        return r
"""
from labs.labkit.build import CompiledLab, LabCompileError, LabError, compile_program
from labs.labkit.plugin import LABS_DIR, find_labs, load_lab, resolve_lab
from labs.labkit.report import Check, Report
from labs.labkit.switch import LabSwitch

__all__ = ["Report", "Check", "LabSwitch", "LabError", "LabCompileError", "CompiledLab",
           "compile_program", "find_labs", "load_lab", "resolve_lab", "LABS_DIR"]
