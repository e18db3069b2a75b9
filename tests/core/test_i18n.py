"""The one catalog: both locales for every key, the choice of locale (HTTP
``Accept-Language``, a client's declared locale, the terminal client's POSIX variables)."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from erlmcp_py.core.i18n import (
    CATALOG,
    DEFAULT_LOCALE,
    LOCALES,
    Texts,
    best_locale,
    choose_locale,
    client_locale,
    negotiate,
    placeholders,
)


def test_every_key_has_every_locale_with_the_same_placeholders() -> None:
    for key, texts in CATALOG.items():
        assert set(texts) == set(LOCALES), key
        assert len({placeholders(text) for text in texts.values()}) == 1, key


def test_the_connect_package_shows_the_same_catalog() -> None:
    from erlmcp_py import connect

    assert connect.CATALOG is CATALOG
    assert connect.Texts is Texts


@pytest.mark.parametrize(
    ("key", "en", "pt"),
    [
        ("mcp.elicitation.action.accept", "Submit", "Enviar"),
        ("mcp.elicitation.action.reject", "Reject", "Recusar"),
        ("mcp.elicitation.action.cancel", "Cancel", "Cancelar"),
        ("mcp.elicitation.url_mode.opening", "Opening external page", "Abrindo página externa"),
        ("mcp.elicitation.field_required", "Required", "Obrigatório"),
    ],
)
def test_buttons_and_notices_have_their_fixed_translations(key: str, en: str, pt: str) -> None:
    assert Texts("en-US")(key) == en
    assert Texts("pt-BR")(key) == pt


def test_the_deadline_countdown_names_the_seconds_in_both_locales() -> None:
    key = "mcp.elicitation.timeout_warning"
    assert Texts("en-US")(key, seconds=30) == "Closing in 30s"
    assert Texts("pt-BR")(key, seconds=30) == "Fechando em 30s"


@pytest.mark.parametrize(
    ("n", "en", "pt"),
    [
        (1, "This request expires in 1 second.", "Este pedido expira em 1 segundo."),
        (5, "This request expires in 5 seconds.", "Este pedido expira em 5 segundos."),
    ],
)
def test_counted_texts_take_one_or_many(n: int, en: str, pt: str) -> None:
    assert Texts("en-US").count("mcp.elicitation.expires", n) == en
    assert Texts("pt-BR").count("mcp.elicitation.expires", n) == pt


def test_every_counted_key_has_one_and_many() -> None:
    for key in CATALOG:
        stem, _, form = key.rpartition(".")
        if form in ("one", "many"):
            assert f"{stem}.one" in CATALOG, key
            assert f"{stem}.many" in CATALOG, key


@pytest.mark.parametrize(
    ("requested", "environ", "locale"),
    [
        ("pt-BR", {"LANG": "en_US.UTF-8"}, "pt-BR"),
        ("en-US", {"LC_ALL": "pt_BR.UTF-8"}, "en-US"),
        (None, {"LANG": "pt_BR.UTF-8"}, "pt-BR"),
        (None, {"LC_ALL": "pt_PT@euro", "LANG": "en_US"}, "pt-BR"),
        (None, {"LC_ALL": "en_GB.UTF-8", "LANG": "pt_BR.UTF-8"}, "en-US"),
        (None, {"LC_MESSAGES": "pt_BR", "LANG": "C"}, "pt-BR"),
        (None, {"LANG": "C.UTF-8"}, "en-US"),
        (None, {}, "en-US"),
        (None, {"LC_ALL": "", "LANG": "pt_BR"}, "pt-BR"),
    ],
)
def test_the_locale_comes_from_lang_then_lc_all_lc_messages_lang(
    requested: str | None, environ: dict[str, str], locale: str
) -> None:
    assert choose_locale(requested, environ) == locale


@pytest.mark.parametrize(
    ("header", "locale"),
    [
        ("pt-BR", "pt-BR"),
        ("pt", "pt-BR"),
        ("pt-PT", "pt-BR"),
        ("PT-br", "pt-BR"),
        ("en-GB", "en-US"),
        ("fr-FR, pt;q=0.5", "pt-BR"),
        ("en;q=0.4, pt-BR;q=0.9", "pt-BR"),
        ("pt;q=0.5, en;q=0.5", "pt-BR"),  # a tie: the order written
        ("en;q=0.5, pt;q=0.5", "en-US"),
        ("pt-BR;q=0, en", "en-US"),
        ("*", DEFAULT_LOCALE),
        ("en;q=0, *", "pt-BR"),  # the wildcard takes a locale that was not refused
        ("pt;q=0, en;q=0, *", None),
        ("fr", None),
        ("", None),
        (None, None),
        ("pt;q=abc, en", "en-US"),  # a malformed quality drops its range
        ("pt;q=2, en", "en-US"),
        ("pt;q=nan, en;q=0.1", "en-US"),
        (" pt-BR ; q=0.8 , ", "pt-BR"),
        (",,;;,", None),
    ],
)
def test_accept_language_is_negotiated_by_quality(header: str | None, locale: str | None) -> None:
    assert best_locale(header) == locale
    assert negotiate(header) == (locale or DEFAULT_LOCALE)
    assert negotiate(header, default="pt-BR") == (locale or "pt-BR")


@given(st.text(max_size=300))
def test_any_accept_language_header_gives_a_known_locale_and_never_raises(header: str) -> None:
    assert negotiate(header) in LOCALES
    assert best_locale(header) in (*LOCALES, None)


@given(st.lists(st.sampled_from(["pt", "en-US", "fr", "*", "q=0", ";", ",", "=", " ", "1.0"])))
def test_header_shaped_inputs_never_raise(parts: list[str]) -> None:
    assert negotiate("".join(parts)) in LOCALES


def test_a_very_long_header_is_cut_not_refused() -> None:
    assert negotiate("fr, " * 10_000 + "pt") == DEFAULT_LOCALE  # past the part read
    assert negotiate("pt-BR, " + "fr, " * 10_000) == "pt-BR"


@pytest.mark.parametrize(
    ("declared", "accept_language", "locale"),
    [
        ("pt-BR", "en-US", "pt-BR"),  # declared wins
        ("en", "pt-BR", "en-US"),
        ("klingon", "pt-BR", "pt-BR"),  # an unknown declaration falls back to the header
        (42, "pt", "pt-BR"),  # not a string: ignored
        (None, None, None),
        ("pt-BR, en;q=0.5", None, "pt-BR"),
    ],
)
def test_a_client_locale_is_declared_then_from_accept_language(
    declared: object, accept_language: str | None, locale: str | None
) -> None:
    assert client_locale(declared, accept_language) == locale


def test_an_unknown_key_is_an_error() -> None:
    with pytest.raises(KeyError):
        Texts()("no such key")


def test_an_unknown_locale_is_an_error() -> None:
    with pytest.raises(ValueError, match="locale must be one of en-US, pt-BR"):
        Texts("fr-FR")
