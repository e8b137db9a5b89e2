"""GOR, the fabric controller: reaches switches only through P4Runtime (``controller.p4rt``).

The controller never imports p4sim: it drives BMv2, p4sim and hardware alike.
"""
