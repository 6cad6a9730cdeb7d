"""What a launch will do, worked out without a GPU (`make.make_plan`): every
expanded parameter bound to its source (`slots`), the bytes of structs passed
by value (`packing`) and what a Triton entry was specialized for
(`specialization`).
"""
