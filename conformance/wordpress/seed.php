<?php
// Installs and seeds the conformance WordPress: php seed.php PORT ADMIN_USER ADMIN_PASSWORD.
// Runs once, on an empty database (conformance/apps.sh). The data is chosen to make targets
// hard: look-alike names one character apart, more categories than one list page holds.
[$_, $port, $admin, $password] = $argv;
$_SERVER['HTTP_HOST'] = "127.0.0.1:$port";
$_SERVER['REQUEST_URI'] = '/';
define('WP_INSTALLING', true);
require '/usr/share/wordpress/wp-load.php';
require_once ABSPATH . 'wp-admin/includes/upgrade.php';
require_once ABSPATH . 'wp-admin/includes/user.php';
require_once ABSPATH . 'wp-admin/includes/taxonomy.php';

if (is_blog_installed()) {
    echo "already installed\n";
    exit(0);
}
wp_install('Harbour Lane Credit Union', $admin, 'web-admin@harbourlane.test', false, '', $password);
// No "is this still your e-mail?" interstitial at sign-in, no welcome panel.
update_option('admin_email_lifespan', time() + 10 * 365 * 86400);
update_user_meta(1, 'show_welcome_panel', 0);
update_option('timezone_string', 'UTC');
switch_theme('twentytwentyone');

$users = [
    ['mara.keane', 'Mara', 'Keane', 'editor'],
    ['tom.okafor', 'Tom', 'Okafor', 'author'],
    ['li.wen', 'Li', 'Wen', 'subscriber'],
    ['li.wen1', 'Li', 'Wen', 'contributor'],
    ['sam.ortiz', 'Sam', 'Ortiz', 'contributor'],
    ['ana.pereira', 'Ana', 'Pereira', 'editor'],
];
foreach ($users as [$login, $first, $last, $role]) {
    $id = wp_insert_user([
        'user_login' => $login, 'user_pass' => wp_generate_password(20),
        'user_email' => "$login@harbourlane.test", 'first_name' => $first, 'last_name' => $last,
        'display_name' => "$first $last", 'role' => $role,
    ]);
    if (is_wp_error($id)) { fwrite(STDERR, $id->get_error_message() . "\n"); exit(1); }
}

$categories = ['Member News', 'Loans', 'Loans 2024', 'Loans 2025', 'Savings', 'Savings Plus',
    'Branch Hours', 'Rates', 'Rates Archive', 'Security Notices', 'Card Services', 'Mortgages',
    'Auto Loans', 'Youth Accounts', 'Community', 'Careers', 'Board Minutes', 'Annual Reports',
    'Holiday Closures', 'Fraud Alerts', 'Online Banking', 'Mobile App', 'Student Loans',
    'Retirement', 'Insurance', 'Business Accounts'];
foreach ($categories as $name) {
    $term = wp_insert_term($name, 'category', ['description' => "Posts about $name."]);
    if (is_wp_error($term)) { fwrite(STDERR, $term->get_error_message() . "\n"); exit(1); }
}

$loans = get_term_by('name', 'Loans', 'category')->term_id;
$rates = get_term_by('name', 'Rates', 'category')->term_id;
foreach ([
    ['Holiday hours for all branches', 'Member News'],
    ['New auto loan rates', 'Rates'],
    ['New auto loan rates (draft)', 'Rates'],
    ['Card freeze now in the app', 'Card Services'],
    ['Annual meeting 2026', 'Board Minutes'],
] as $i => [$title, $cat]) {
    wp_insert_post([
        'post_title' => $title, 'post_content' => "<p>$title: details for members.</p>",
        'post_status' => 'publish', 'post_author' => 1,
        'post_category' => [get_term_by('name', $cat, 'category')->term_id],
    ]);
}
echo "seeded\n";
