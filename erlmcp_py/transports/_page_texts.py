"""Every text the hosted elicitation page shows, in en-US and pt-BR, and the choice of one.

:data:`TEXTS` maps a key to its text per locale (``{seconds}``-style fields are filled with
:meth:`str.format`); :func:`negotiate` picks the locale from ``Accept-Language``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = ["DEFAULT_LOCALE", "LOCALES", "TEXTS", "negotiate", "text"]

#: The page's locales, the default first.
LOCALES: Final = ("en-US", "pt-BR")
DEFAULT_LOCALE: Final = "en-US"

TEXTS: Final[Mapping[str, Mapping[str, str]]] = {
    "mcp.elicitation.action.accept": {"en-US": "Submit", "pt-BR": "Enviar"},
    "mcp.elicitation.action.reject": {"en-US": "Reject", "pt-BR": "Recusar"},
    "mcp.elicitation.action.cancel": {"en-US": "Cancel", "pt-BR": "Cancelar"},
    "mcp.elicitation.timeout_warning": {
        "en-US": "Closing in {seconds}s",
        "pt-BR": "Fechando em {seconds}s",
    },
    "mcp.elicitation.url_mode.opening": {
        "en-US": "Opening external page",
        "pt-BR": "Abrindo página externa",
    },
    "mcp.elicitation.field_required": {"en-US": "Required", "pt-BR": "Obrigatório"},
    "mcp.elicitation.page.title": {
        "en-US": "Information requested",
        "pt-BR": "Informação solicitada",
    },
    "mcp.elicitation.page.secure_note": {
        "en-US": "What you enter here goes to the server only, never through the chat.",
        "pt-BR": "O que você digitar aqui vai apenas para o servidor, nunca pelo chat.",
    },
    "mcp.elicitation.page.choose": {"en-US": "Choose…", "pt-BR": "Escolha…"},
    "mcp.elicitation.page.accepted": {
        "en-US": "Thank you. Your answer was sent; you can close this page.",
        "pt-BR": "Obrigado. Sua resposta foi enviada; você pode fechar esta página.",
    },
    "mcp.elicitation.page.declined": {
        "en-US": "You rejected this request. You can close this page.",
        "pt-BR": "Você recusou este pedido. Você pode fechar esta página.",
    },
    "mcp.elicitation.page.cancelled": {
        "en-US": "You cancelled this request. You can close this page.",
        "pt-BR": "Você cancelou este pedido. Você pode fechar esta página.",
    },
    "mcp.elicitation.page.closed": {
        "en-US": "This request is closed: it expired or was already answered.",
        "pt-BR": "Este pedido está encerrado: expirou ou já foi respondido.",
    },
    "mcp.elicitation.page.not_found": {
        "en-US": "There is no such request.",
        "pt-BR": "Este pedido não existe.",
    },
    "mcp.elicitation.page.forbidden": {
        "en-US": "This answer did not come from this page; reload the page and try again.",
        "pt-BR": "Esta resposta não veio desta página; recarregue a página e tente de novo.",
    },
    "mcp.elicitation.page.busy": {
        "en-US": "Your answer is being checked; try again in a moment.",
        "pt-BR": "Sua resposta está sendo verificada; tente de novo em instantes.",
    },
    "mcp.elicitation.page.fix_errors": {
        "en-US": "Please correct the fields marked below.",
        "pt-BR": "Corrija os campos indicados abaixo.",
    },
    "mcp.elicitation.page.invalid": {"en-US": "Invalid value", "pt-BR": "Valor inválido"},
    "mcp.elicitation.page.too_short": {
        "en-US": "At least {n} characters",
        "pt-BR": "Pelo menos {n} caracteres",
    },
    "mcp.elicitation.page.too_long": {
        "en-US": "At most {n} characters",
        "pt-BR": "No máximo {n} caracteres",
    },
    "mcp.elicitation.page.too_small": {
        "en-US": "Must be at least {n}",
        "pt-BR": "Deve ser no mínimo {n}",
    },
    "mcp.elicitation.page.too_large": {
        "en-US": "Must be at most {n}",
        "pt-BR": "Deve ser no máximo {n}",
    },
    "mcp.elicitation.page.not_integer": {
        "en-US": "Must be a whole number",
        "pt-BR": "Deve ser um número inteiro",
    },
    "mcp.elicitation.page.not_number": {"en-US": "Must be a number", "pt-BR": "Deve ser um número"},
    "mcp.elicitation.page.not_email": {
        "en-US": "Must be an email address",
        "pt-BR": "Deve ser um endereço de e-mail",
    },
    "mcp.elicitation.page.not_url": {
        "en-US": "Must be a web address (https://…)",
        "pt-BR": "Deve ser um endereço web (https://…)",
    },
    "mcp.elicitation.page.not_date": {
        "en-US": "Must be a date (YYYY-MM-DD)",
        "pt-BR": "Deve ser uma data (AAAA-MM-DD)",
    },
    "mcp.elicitation.page.pattern": {
        "en-US": "Does not have the expected form",
        "pt-BR": "Não está no formato esperado",
    },
    "mcp.elicitation.page.choices": {
        "en-US": "Choose between {lo} and {hi}",
        "pt-BR": "Escolha entre {lo} e {hi}",
    },
}


def text(key: str, locale: str, **fields: object) -> str:
    """The text of ``key`` in ``locale`` (the default locale's when it has none), filled in."""
    found = TEXTS[key]
    template = found.get(locale) or found[DEFAULT_LOCALE]
    return template.format(**fields) if fields else template


def negotiate(accept_language: str | None) -> str:
    """The page's locale for an ``Accept-Language`` header (RFC 9110 ``q`` weights).

    A range matches a locale exactly (``pt-BR``) or by its primary language (``pt``,
    ``pt-PT`` -> ``pt-BR``; ``en-GB`` -> ``en-US``); ``*`` or nothing usable gives the
    default, en-US.
    """
    best: tuple[float, int, str] | None = None
    for index, part in enumerate((accept_language or "").split(",")):
        tag, _, params = part.strip().partition(";")
        tag = tag.strip().lower()
        weight = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        if not tag or weight <= 0:
            continue
        locale = _match(tag)
        if locale is None:
            continue
        key = (weight, -index, locale)
        if best is None or key[:2] > best[:2]:
            best = key
    return best[2] if best is not None else DEFAULT_LOCALE


def _match(tag: str) -> str | None:
    if tag == "*":
        return DEFAULT_LOCALE
    for locale in LOCALES:
        if tag == locale.lower():
            return locale
    primary = tag.split("-", 1)[0]
    for locale in LOCALES:
        if primary == locale.split("-", 1)[0].lower():
            return locale
    return None
