"""The import layers of docs/architecture.md ("Layers"), and no import cycle anywhere in the project.

Imports inside functions count: moving an import into a function hides a cycle from Python at
import time, not from these tests (grimp reads every import statement of a module).
"""

import grimp
import pytest

PACKAGES = ("office", "coworkers", "sessions", "benchmarks")

# Top first. A module may import the layers below it, never one above, directly or through any
# other module. Modules grouped in one layer may not import each other either.
LAYERS = (
    ("sessions.tasks",),  # the jobs: call the runner, and enqueue what posting and the runner announce
    ("sessions.pipeline", "sessions.upkeep"),  # the runner; an imported session's catch-up
    ("coworkers.tools", "sessions.meetings"),  # what a coworker's turn can do; how a meeting closes
    ("sessions.posting",),  # store an instruction or a message, and show it
)


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PACKAGES, cache_dir=None)  # no cache: always the code as it is


def test_the_layers_import_only_downwards(graph):
    illegal = graph.find_illegal_dependencies_for_layers(layers=[grimp.Layer(*layer) for layer in LAYERS])
    # A route runs from a module of the lower layer (a head) to one of the higher (a tail).
    routes = [
        describe(graph, (min(route.heads), *route.middle, min(route.tails)))
        for dependency in illegal
        for route in dependency.routes
    ]
    assert not illegal, "a lower layer imports a higher one (docs/architecture.md, Layers):\n" + "\n".join(routes)


def test_no_module_imports_itself_through_others(graph):
    cycles = {
        describe(graph, (module, *chain))
        for module in graph.modules
        for imported in graph.find_modules_directly_imported_by(module)
        if (chain := graph.find_shortest_chain(importer=imported, imported=module))
    }
    assert not cycles, "import cycles (give them a direction, docs/architecture.md, Layers):\n" + "\n".join(sorted(cycles))


def test_the_layers_are_the_modules_they_name(graph):
    """A renamed or removed module would leave its layer checking nothing."""
    assert {name for layer in LAYERS for name in layer} <= graph.modules


def describe(graph: grimp.ImportGraph, chain) -> str:
    """`a -> b (line 12) -> c (line 40)`: where each import of the chain is."""
    steps = [chain[0]]
    for importer, imported in zip(chain, chain[1:]):
        lines = sorted({d["line_number"] for d in graph.get_import_details(importer=importer, imported=imported)})
        steps.append(f"{imported} ({importer} line {', '.join(map(str, lines))})" if lines else imported)
    return " -> ".join(steps)
