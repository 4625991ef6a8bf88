"""The notebook layer: ``%load_ext cutile_lab``, the ``%%tilekernel`` cell magic, the report
(MIME bundle with HTML and text fallbacks), timing/device/roofline line magics and tuning widgets.

It displays what the other stages produce and must not reimplement any of them.
"""
