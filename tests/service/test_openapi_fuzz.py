"""The service against its own description (/openapi.json): every route fuzzed from it by
schemathesis, valid and invalid requests alike, a bounded number of cases each. No answer is
a 5xx, each is as described (status, content type, schema), and each 4xx is a JSON error."""

import json

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode

from seq2seq.config import Config, ServeConfig, translation_pair
from seq2seq.decoding.engines import TorchEngine
from seq2seq.service.openapi import Choices, description

from helpers import call, running

# Small limits keep each decoding short; the description's bounds follow them.
LIMITS = {"max_sentences": 4, "max_chars": 60, "max_beam_size": 3}
CASES = 100  # per route: about 300 in all (a GET without parameters has one)
SOURCE, TARGET = (language.code for language in translation_pair(Config(), ServeConfig()))
MODELS = [Config().experiment]  # the model's name: its experiment's
DESCRIPTION = description(ServeConfig(**LIMITS), Choices([SOURCE], [TARGET], MODELS), keys=False)
SCHEMA = schemathesis.openapi.from_dict(DESCRIPTION)
SCHEMA.config.generation.update(
    modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE], max_examples=CASES
)
rejected = SCHEMA.config.checks.negative_data_rejection  # what an invalid request may get
rejected.expected_statuses = [*rejected.expected_statuses, "413"]  # too large: a valid "no"
# Not checked: that each valid request gets a 2xx. JSON Schema's integers include 1.0, which
# the server refuses (400: "must be an integer"); the other valid requests are answered as
# test_serve.py and test_libretranslate.py check.
SCHEMA.config.checks.update(excluded_check_names=["positive_data_acceptance"])


@pytest.fixture(scope="module")
def served(trained_numbers_checkpoint, tmp_path_factory):
    kept = tmp_path_factory.mktemp("files")  # the translated files, the glossaries
    glossaries = str(kept / "glossaries.db")
    model = TorchEngine(trained_numbers_checkpoint[0])
    with running(model, files_dir=str(kept), glossaries_file=glossaries, **LIMITS) as server:
        yield server


def test_the_description_is_served_and_covers_every_route(served):
    status, described, _ = call(served.url, "GET", "/openapi.json")
    assert (status, described) == (200, DESCRIPTION)
    routes = {
        (method, route.path)
        for route in served.config.app.routes
        for method in route.methods
        if method != "HEAD"
    }
    assert {(m.upper(), path) for path, item in described["paths"].items() for m in item} == routes
    assert described["paths"]["/translate"]["post"]["responses"]["200"]


DEEPL = ("/v2/", "/v3/")  # DeepL's routes: its errors' shape, {"message"}


def an_error_if_4xx(ctx, response, case) -> None:
    """Each 4xx: a JSON object {"error": a message}; DeepL's routes' own, {"message": ...}
    (a method they do not take is the router's 405, ours)."""
    if 400 <= response.status_code < 500:
        answer = json.loads(response.content)
        field = (
            "message" if case.path.startswith(DEEPL) and response.status_code != 405 else "error"
        )
        assert isinstance(answer.get(field), str) and answer[field], answer


@SCHEMA.parametrize()
@settings(deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_every_route_answers_as_described(case, served):
    response = case.call_and_validate(base_url=served.url, additional_checks=[an_error_if_4xx])
    assert response.status_code < 500
