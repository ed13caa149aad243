"""Recording a run: the rate schedule (`schedule`), the recorder that samples every stream once per physics
step (`recorder`), ground-truth files (`ground_truth`) and the state log (`states`). The bags themselves (layout,
topics, messages, writer, reader) are a format: core.formats.bags.

Import the defining module: importing this package loads nothing.
"""
