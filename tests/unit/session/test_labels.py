"""Short server labels tell the servers of a run apart (issue 21 item 2)."""

from __future__ import annotations

from kltui.session.labels import server_labels


def test_one_host_is_told_apart_by_port():
    labels = server_labels(["http://localhost:30000", "http://localhost:30001"])
    assert labels == {"http://localhost:30000": ":30000", "http://localhost:30001": ":30001"}


def test_several_hosts_keep_host_and_port():
    labels = server_labels(["http://gpu-a:30000", "http://gpu-b:30001"])
    assert labels == {"http://gpu-a:30000": "gpu-a:30000", "http://gpu-b:30001": "gpu-b:30001"}


def test_paths_and_schemes_are_kept_when_they_are_the_only_difference():
    assert set(server_labels(["http://a:1/x", "http://a:1/y"]).values()) == {"a:1/x", "a:1/y"}
    both = ["http://a:1", "https://a:1"]
    assert server_labels(both) == {u: u for u in both}


def test_a_lone_server_and_repeats_get_one_label_each():
    assert server_labels(["http://h:30000", "http://h:30000"]) == {"http://h:30000": ":30000"}


def test_a_domain_every_host_shares_is_left_out():
    urls = ["http://gpu-17.dc.example.com:30000", "http://gpu-18.dc.example.com:30000"]
    assert list(server_labels(urls).values()) == ["gpu-17:30000", "gpu-18:30000"]
    # addresses stay whole, and so do names that differ in their domain
    ips = ["http://10.0.0.1:30000", "http://10.0.0.2:30000"]
    assert list(server_labels(ips).values()) == ["10.0.0.1:30000", "10.0.0.2:30000"]
    mixed = ["http://a.x.com:1", "http://a.y.com:1"]
    assert list(server_labels(mixed).values()) == ["a.x:1", "a.y:1"]
