// Boost.URL in header-only mode: its sources compiled once, here.
#include <boost/url/src.hpp>
