"""`cubinrun tune`: search a spec's sweep space for the best configuration
(SPEC section 6). space -> strategies -> store -> evaluate -> search ->
retime -> output; cli/tune.py wires them."""
