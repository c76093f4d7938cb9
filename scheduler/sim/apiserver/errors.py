"""API errors as `v1 Status` objects, worded as the real API server words them.

Clients (client-go, kubernetes_asyncio, kubectl) key on `code` and `reason`, and humans read
`message`; both must match the real server so that error handling tested against the sandbox
holds in a cluster.
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An error answer: HTTP code, Status reason, message, optional details and headers."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            out["details"] = self.details
        return out


def _details(kind: str, name: str | None, group: str = "") -> dict[str, Any]:
    d: dict[str, Any] = {"kind": kind}
    if name:
        d["name"] = name
    if group:
        d["group"] = group
    return d


def _qualified(resource: str, group: str) -> str:
    # the real server names resources as "pods" for the core group and "podgroups.scheduling.volcano.sh" otherwise
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, name: str, group: str = "") -> ApiError:
    q = _qualified(resource, group)
    return ApiError(404, "NotFound", f'{q} "{name}" not found', _details(resource, name, group))


def already_exists(resource: str, name: str, group: str = "") -> ApiError:
    q = _qualified(resource, group)
    return ApiError(409, "AlreadyExists", f'{q} "{name}" already exists', _details(resource, name, group))


def conflict(resource: str, name: str, why: str, group: str = "") -> ApiError:
    q = _qualified(resource, group)
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {q} "{name}": {why}',
        _details(resource, name, group),
    )


STALE = "the object has been modified; please apply your changes to the latest version and try again"


def invalid(kind: str, name: str, causes: list[tuple[str, str]], group: str = "") -> ApiError:
    """422 naming each offending field: `causes` is a list of (field path, explanation)."""
    text = ", ".join(f"{field}: {why}" for field, why in causes)
    if len(causes) > 1:
        text = "[" + text + "]"
    details = _details(kind, name, group)
    details["causes"] = [
        {"reason": _cause_reason(why), "message": why, "field": field} for field, why in causes
    ]
    return ApiError(422, "Invalid", f'{kind} "{name}" is invalid: {text}', details)


def _cause_reason(why: str) -> str:
    if why.startswith("Required value"):
        return "FieldValueRequired"
    if why.startswith("Forbidden"):
        return "FieldValueForbidden"
    if why.startswith("Unsupported value"):
        return "FieldValueNotSupported"
    return "FieldValueInvalid"


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden(resource: str, name: str, why: str, group: str = "") -> ApiError:
    q = _qualified(resource, group)
    return ApiError(403, "Forbidden", f'{q} "{name}" is forbidden: {why}', _details(resource, name, group))


def expired(message: str) -> ApiError:
    # watch answers "Expired" (410) for a resourceVersion older than the retained history
    return ApiError(410, "Expired", message)


def gone(message: str) -> ApiError:
    return ApiError(410, "Gone", message)


def too_many_requests(retry_after: int = 1) -> ApiError:
    return ApiError(
        429,
        "TooManyRequests",
        "Too many requests, please try again later.",
        {"retryAfterSeconds": retry_after},
        {"Retry-After": str(retry_after)},
    )


def internal(message: str) -> ApiError:
    return ApiError(
        500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]}
    )


def method_not_allowed(
    message: str = "the server does not allow this method on the requested resource",
) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)


def unsupported_media_type(content_type: str) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got "{content_type}")',
    )


def too_large(limit: int) -> ApiError:
    return ApiError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")


def path_not_found(path: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        "the server could not find the requested resource",
        {"causes": [{"reason": "UnexpectedServerResponse", "message": f"404 page not found: {path}"}]},
    )


def success(details: dict[str, Any] | None = None, code: int = 200) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": code,
    }
    if details:
        out["details"] = details
    return out
