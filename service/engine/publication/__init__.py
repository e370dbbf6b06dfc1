"""The publication stages of every endpoint, one module each: an engine's cells and contributions
-> the privacy stage (service/privacy/) -> order and shape of the records. Both engines call them,
so that the same cells are published the same way whatever computed them."""
