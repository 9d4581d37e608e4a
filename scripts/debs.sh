# Sourced by the install scripts: debs__install_missing PKG... installs the Debian packages
# among PKG that are not installed yet (apt-get, as root), and does nothing when all are there.
# Outside root it names what is missing and what to run ($DEBS_HINT), and returns 1.

debs__install_missing() {
	local p missing=()

	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	((${#missing[@]})) || return 0
	if [[ $(id -u) -ne 0 ]]; then
		echo "spanprof: missing packages: ${missing[*]}; ${DEBS_HINT:-run as root to install them}" >&2
		return 1
	fi
	echo "spanprof: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
