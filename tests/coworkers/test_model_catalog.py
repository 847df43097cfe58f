"""The models and prices in settings, the one place they are kept: real model names, and every
caller reads them from there."""

import pytest
from anthropic.types.model_param import ModelParam
from typing import get_args

from coworkers.providers import Usage
from coworkers.providers.wire import cost_usd

SDK_MODELS = set(get_args(get_args(ModelParam)[0]))


def test_every_model_named_in_settings_is_one_the_sdk_knows(settings):
    """A typo here would make every call of that kind fail with a 404 from the API."""
    named = {settings.REPLY_MODEL, settings.SUMMARY_MODEL, settings.ROUTER_MODEL, *settings.MODEL_PRICES}
    assert named - SDK_MODELS == set()
    assert {settings.REPLY_MODEL, settings.SUMMARY_MODEL, settings.ROUTER_MODEL} <= set(settings.MODEL_PRICES)


def test_a_long_prompt_is_priced_at_the_long_prompt_rates(settings):
    short = Usage(input_tokens=100_000, output_tokens=1_000_000)
    long = Usage(input_tokens=100_001, output_tokens=1_000_000)

    assert cost_usd("claude-haiku-5-5", short, settings.MODEL_PRICES) == pytest.approx(0.01 + 0.50)
    assert cost_usd("claude-haiku-5-5", long, settings.MODEL_PRICES) == pytest.approx(100_001 * 0.50 / 1e6 + 2.50)


@pytest.mark.django_db
def test_policies_routing_and_meeting_notes_use_the_models_in_settings(settings, direct_channel, mina, main_channel, theo):
    from coworkers.providers.scripted import Reply, ScriptedProvider
    from coworkers.routing import choose_responders
    from sessions.prompts import resolve_policy

    settings.REPLY_MODEL, settings.SUMMARY_MODEL, settings.ROUTER_MODEL = "claude-opus-4-8", "claude-haiku-5-5", "claude-sonnet-5"

    policy = resolve_policy(direct_channel, mina)
    assert (policy.reply_model, policy.summary_model) == ("claude-opus-4-8", "claude-haiku-5-5")
    router = ScriptedProvider([Reply('["theo"]')])
    assert choose_responders(main_channel, "Is the deploy green?", router) == [theo]
    assert router.requests[0].model == "claude-sonnet-5"
