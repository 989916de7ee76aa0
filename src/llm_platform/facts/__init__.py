"""The facts every layer reads and none decides: the GPU and CPU instance catalogs (`catalog`, `cpu_catalog`),
the model profiles and their geometry from a `config.json` (`model_profiles`, `geometry`), the cold-start
budget per cache mode (`cold_start`) and the pinned chart and image versions (`versions`).

The floor of the package: these modules import only each other (tests/test_import_graph.py), so the stack
schema (config/schema/), the plan, the specs and the simulator all sit above them."""
