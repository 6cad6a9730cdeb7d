"""What a launch will do, worked out without a GPU (`make.make_plan`): every
expanded parameter bound to its source (`slots`), the bytes of structs passed
by value (`packing`), what a Triton entry was specialized for
(`specialization`) and whether the host and device can hold it (`capacity`).
"""
