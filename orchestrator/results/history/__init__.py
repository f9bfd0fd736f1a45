"""The history of results: every results directory under one or more roots (a night, as a
nightly job makes one) indexed in one store (store), read into series over nights
(series), and summed up on the console (console)."""
