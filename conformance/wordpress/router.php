<?php
// The router for PHP's built-in server in front of Debian's WordPress: Debian keeps themes and
// uploads under /var/lib/wordpress/wp-content, outside the document root, so those static files
// are served from there; everything else is WordPress as Debian installed it.
$path = rawurldecode(parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH) ?? '/');
if (str_starts_with($path, '/wp-content/')) {
    $base = realpath('/var/lib/wordpress/wp-content');
    $file = realpath('/var/lib/wordpress' . $path);
    if ($file === false) {
        $file = realpath('/usr/share/wordpress' . $path);
        $base = realpath('/usr/share/wordpress/wp-content');
    }
    $types = ['css' => 'text/css', 'js' => 'text/javascript', 'png' => 'image/png',
        'svg' => 'image/svg+xml', 'woff2' => 'font/woff2', 'woff' => 'font/woff',
        'jpg' => 'image/jpeg', 'gif' => 'image/gif', 'json' => 'application/json'];
    $ext = strtolower(pathinfo($path, PATHINFO_EXTENSION));
    // Debian links theme files into /usr/share, so a resolved file may live under either tree.
    $inside = $file !== false && is_file($file)
        && (str_starts_with($file, '/var/lib/wordpress/') || str_starts_with($file, '/usr/share/'));
    if (!$inside || !isset($types[$ext])) {
        http_response_code(404);
        return true;
    }
    header('Content-Type: ' . $types[$ext]);
    readfile($file);
    return true;
}
return false;
