"""The client's catalog: both locales for every key, and the choice of locale."""

from __future__ import annotations

import pytest

from erlmcp_py.connect import CATALOG, LOCALES, Texts, choose_locale, placeholders


def test_every_key_has_every_locale_with_the_same_placeholders() -> None:
    for key, texts in CATALOG.items():
        assert set(texts) == set(LOCALES), key
        assert len({placeholders(text) for text in texts.values()}) == 1, key


@pytest.mark.parametrize(
    ("key", "en", "pt"),
    [
        ("Submit", "Submit", "Enviar"),
        ("Reject", "Reject", "Recusar"),
        ("Cancel", "Cancel", "Cancelar"),
        ("Required", "Required", "Obrigatório"),
        ("Opening external page", "Opening external page", "Abrindo página externa"),
    ],
)
def test_buttons_and_notices_have_their_fixed_translations(key: str, en: str, pt: str) -> None:
    assert Texts("en-US")(key) == en
    assert Texts("pt-BR")(key) == pt


def test_the_deadline_warning_names_the_seconds_in_both_locales() -> None:
    assert Texts("en-US")("Closing in {seconds}s", seconds=30) == "Closing in 30s"
    assert Texts("pt-BR")("Closing in {seconds}s", seconds=30) == "Fechando em 30s"


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


def test_an_unknown_key_is_an_error() -> None:
    with pytest.raises(KeyError):
        Texts()("no such key")
