"""launch/k8s.yaml: valid YAML, equal to the data it was built from, and a valid PyTorchJob.

The manifest is validated three ways: against the PyTorchJob CRD's OpenAPI schema (test data,
see tests/data/kubeflow/SOURCE.md) with jsonschema; field by field against the same schema the
way `kubectl apply --validate=strict` does (an unknown field is an error, where plain JSON
Schema would let it through); and against the rules the training operator and Kubernetes add on
top (names are DNS labels, the container is called `pytorch`, the port is named).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from parc.backends.torch import launchers, yaml_text
from parc.backends.torch.launchers import job_shape

from .conftest import ROOT, SPECS
from .launcher_helpers import (
    HOSTILE_VALUES,
    LAUNCH_OPTIONS,
    hostile_launch_block,
    plan_of,
    plan_of_file,
    spec_text,
)

CRD = ROOT / "tests" / "data" / "kubeflow" / "pytorchjobs-crd-v1.excerpt.yaml"
COMPILABLE = [p for p in SPECS if not plan_of_file(p).holes] + [LAUNCH_OPTIONS]
DNS_1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
INT32 = (-(2**31), 2**31 - 1)


@pytest.fixture(scope="module")
def schema() -> dict:
    crd = yaml.safe_load(CRD.read_text(encoding="utf-8"))
    assert crd["kind"] == "CustomResourceDefinition" and crd["spec"]["group"] == "kubeflow.org"
    (version,) = crd["spec"]["versions"]
    assert version["name"] == "v1"
    return version["schema"]["openAPIV3Schema"]


def manifests():
    yield "hostile-env", plan_of(spec_text(launch=hostile_launch_block()))
    yield "one-node", plan_of(spec_text(layout="tp 2 x dp 4 on nodes(8 gpus, nvlink)"))
    for path in COMPILABLE:
        yield path.stem, plan_of_file(path)


CASES = list(manifests())


def load(plan) -> dict:
    text = launchers.files(plan)["launch/k8s.yaml"]
    documents = list(yaml.safe_load_all(text))
    assert len(documents) == 1
    return documents[0]


# ---------------------------------------------------------------------------------------------
# the YAML writer


@pytest.mark.parametrize(("name", "plan"), CASES, ids=[c[0] for c in CASES])
def test_the_yaml_reads_back_as_the_data_it_was_built_from(name, plan):
    assert load(plan) == launchers.pytorchjob(job_shape(plan))


yaml_text_strings = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
yaml_scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**63) | yaml_text_strings
yaml_data = st.recursive(
    yaml_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(yaml_text_strings, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(yaml_text_strings, yaml_data, min_size=1, max_size=5))
def test_any_data_round_trips_through_the_writer(document):
    assert yaml.safe_load(yaml_text.dump(document)) == document


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cs",))))
def test_every_quoted_string_is_also_a_json_string(text):
    quoted = yaml_text.quote(text)
    assert json.loads(quoted) == text
    assert yaml.safe_load(quoted) == text
    assert "\n" not in quoted


@pytest.mark.parametrize("word", ["yes", "No", "on", "OFF", "y", "null", "true", "~", "1", "0x10", "1e3", "- a", "a: b",
                                  "#c", "", " ", "&a", "*a", "!t", "%d", "@x", "`x", "|", ">", "'", '"', "nvidia.com/gpu"])
def test_words_yaml_would_reinterpret_stay_strings(word):
    assert yaml.safe_load(yaml_text.dump({word: word, "k": [word]})) == {word: word, "k": [word]}


# ---------------------------------------------------------------------------------------------
# the CRD schema


def int32_checker() -> jsonschema.FormatChecker:
    checker = jsonschema.FormatChecker()

    @checker.checks("int32")
    def is_int32(value) -> bool:
        return not isinstance(value, int) or INT32[0] <= value <= INT32[1]

    return checker


@pytest.mark.parametrize(("name", "plan"), CASES, ids=[c[0] for c in CASES])
def test_manifest_is_valid_against_the_crd_schema(name, plan, schema):
    jsonschema.Draft7Validator(schema, format_checker=int32_checker()).validate(load(plan))


def unknown_fields(value, schema: dict, path: str = "") -> list[str]:
    """Fields the schema does not declare, as `kubectl apply --validate=strict` reports them."""
    found = []
    if isinstance(value, dict) and schema.get("type") == "object":
        declared = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            where = f"{path}.{key}"
            if declared is not None and key in declared:
                found += unknown_fields(item, declared[key], where)
            elif isinstance(extra, dict):
                found += unknown_fields(item, extra, where)
            elif declared is not None:
                omitted = key in schema.get("x-parc-omitted", ())
                found.append(f"{where}" + (" (left out of the CRD excerpt: copy its schema in)" if omitted else ""))
    elif isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            found += unknown_fields(item, schema["items"], f"{path}[{index}]")
    return found


@pytest.mark.parametrize(("name", "plan"), CASES, ids=[c[0] for c in CASES])
def test_manifest_has_no_field_the_crd_does_not_declare(name, plan, schema):
    assert unknown_fields(load(plan), schema) == []


def test_the_strict_field_check_can_fail(schema):
    job = launchers.pytorchjob(job_shape(plan_of(spec_text())))
    job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["workdir"] = "/x"
    job["spec"]["runPolicy"] = {}
    assert unknown_fields(job, schema) == [
        ".spec.pytorchReplicaSpecs.Master.template.spec.containers[0].workdir",
        ".spec.runPolicy (left out of the CRD excerpt: copy its schema in)",
    ]
    job = launchers.pytorchjob(job_shape(plan_of(spec_text())))
    job["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = "1"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(schema).validate(job)


# ---------------------------------------------------------------------------------------------
# what the operator and Kubernetes require beyond the schema


def expand_like_kubernetes(text: str, env: dict[str, str]) -> str:
    """Kubernetes' `$(VAR)` expansion of env values and commands (k8s.io/kubernetes
    third_party/forked/golang/expansion): `$$` is `$`, `$(NAME)` of a known NAME is its value,
    anything else stays as written."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "$" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(":
                end = text.find(")", i + 2)
                if end != -1 and text[i + 2:end] in env:
                    out.append(env[text[i + 2:end]])
                    i = end + 1
                    continue
        out.append(text[i])
        i += 1
    return "".join(out)


@pytest.mark.parametrize(("name", "plan"), CASES, ids=[c[0] for c in CASES])
def test_manifest_meets_the_operators_rules(name, plan):
    job = load(plan)
    shape = job_shape(plan)
    assert job["apiVersion"] == "kubeflow.org/v1" and job["kind"] == "PyTorchJob"
    metadata = job["metadata"]
    assert DNS_1035_LABEL.match(metadata["name"]) and len(metadata["name"]) <= 63
    assert metadata.get("namespace") == shape.namespace
    replicas = job["spec"]["pytorchReplicaSpecs"]
    assert set(replicas) <= {"Master", "Worker"} and replicas["Master"]["replicas"] == 1
    for kind, replica in replicas.items():
        for index in range(replica["replicas"]):
            pod = f"{metadata['name']}-{kind.lower()}-{index}"
            assert len(pod) <= 63 and DNS_1035_LABEL.match(pod), pod
        pod = replica["template"]["spec"]
        names = [c["name"] for c in pod["containers"]]
        assert names == ["pytorch"]
        (container,) = pod["containers"]
        assert [p["name"] for p in container["ports"]] == ["pytorchjob-port"]
        assert container["ports"][0]["containerPort"] == shape.port
        env = container.get("env", [])
        assert len({e["name"] for e in env}) == len(env), "env names must be unique (a list-map keyed by name)"
        mounts = {m["name"] for m in container["volumeMounts"]}
        assert mounts <= {v["name"] for v in pod["volumes"]}
        command = [expand_like_kubernetes(word, {"MASTER_ADDR": "m", "MASTER_PORT": "7"})
                   for word in container["command"]]
        assert command[command.index("--rdzv-endpoint") + 1] == "m:7"


def test_environment_values_reach_the_pod_unchanged():
    job = load(plan_of(spec_text(launch=hostile_launch_block())))
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        env = replica["template"]["spec"]["containers"][0]["env"]
        defined = {"MASTER_ADDR": "must-not-appear", "ESCAPED": "must-not-appear"}
        seen = {e["name"]: expand_like_kubernetes(e["value"], defined) for e in env}
        assert seen == HOSTILE_VALUES


def test_manifest_names_its_image_and_namespace_from_the_spec():
    job = load(plan_of_file(LAUNCH_OPTIONS))
    assert job["metadata"] == {"name": "launch-options-v2", "namespace": "training"}
    container = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert container["image"] == "nvcr.io/nvidia/pytorch:24.07-py3"
    assert container["workingDir"] == "/workspace/Launch_Options.v2"
    command = container["command"]
    assert command[command.index("--max-restarts") + 1] == "2"  # `launch { restarts 2 }`


def test_crd_excerpt_records_its_source():
    note = (Path(CRD).parent / "SOURCE.md").read_text(encoding="utf-8")
    assert "c20bf65e03b85543c0b2ff25b14c7e335cce34f9" in note
    assert "manifests/base/crds/kubeflow.org_pytorchjobs.yaml" in note


def test_without_an_image_the_manifest_names_a_valid_local_image():
    job = load(plan_of(spec_text(job="My_Job.V2")))
    image = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["image"]
    assert image == "my-job-v2"
    assert re.fullmatch(r"[a-z0-9]+([._-][a-z0-9]+)*", image)  # a Docker repository name
