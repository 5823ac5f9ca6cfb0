"""HTTPS extenders: makeTransport's TLS settings (enableHTTPS, tlsConfig) and their failures."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import pytest
from extender_helpers import Canned, extender_config, node_manifest, pod_info, snapshot_of

from kubesched.config.types import ExtenderTLSConfig
from kubesched.extender.client import ExtenderCallError, HTTPExtender

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")

OK = {"filter": Canned(200, b'{"NodeNames": ["n-1"]}')}
NODES = [node_manifest("n-1")]


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate valid for the name localhost only (no IP SAN)."""
    d = tmp_path_factory.mktemp("tls")
    key, crt = d / "key.pem", d / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost", "-keyout", str(key), "-out", str(crt)],
        check=True, capture_output=True,
    )  # fmt: skip
    return crt, key


@pytest.fixture
def https(fake, cert):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(*cert)
    return fake(OK, tls=ctx)


def _filter(url: str, **kw) -> list[str]:
    ext = HTTPExtender(extender_config(url, node_cache_capable=True, **kw))
    return [ni.name for ni in ext.filter(pod_info("p"), snapshot_of(NODES).nodes).nodes]


def test_enable_https_without_ca_skips_verification(https):
    assert _filter(https.url, enable_https=True) == ["n-1"]


def test_insecure_skips_verification(https):
    assert _filter(https.url, tls_config=ExtenderTLSConfig(insecure=True)) == ["n-1"]


def test_ca_file_and_server_name(https, cert):
    tls = ExtenderTLSConfig(ca_file=str(cert[0]), server_name="localhost")
    assert _filter(https.url, tls_config=tls) == ["n-1"]


def test_ca_data(https, cert):
    tls = ExtenderTLSConfig(ca_data=cert[0].read_text(), server_name="localhost")
    assert _filter(https.url, tls_config=tls) == ["n-1"]


def test_ca_without_the_right_name_fails_verification(https, cert):
    with pytest.raises(ExtenderCallError) as err:
        _filter(https.url, tls_config=ExtenderTLSConfig(ca_file=str(cert[0])))
    assert str(err.value).startswith(f'Post "{https.url}/filter": tls: failed to verify certificate: x509: ')


def test_unknown_authority(https):
    with pytest.raises(ExtenderCallError) as err:
        _filter(https.url)
    assert str(err.value) == (
        f'Post "{https.url}/filter": tls: failed to verify certificate: x509: certificate signed by unknown authority'
    )


def test_https_url_to_a_plain_http_server(fake):
    plain = fake(OK)
    url = plain.url.replace("http://", "https://")
    with pytest.raises(ExtenderCallError) as err:
        _filter(url, enable_https=True)
    assert str(err.value) == f'Post "{url}/filter": http: server gave HTTP response to HTTPS client'


def test_the_url_scheme_decides_not_enable_https(fake):
    assert _filter(fake(OK).url, enable_https=True) == ["n-1"]
